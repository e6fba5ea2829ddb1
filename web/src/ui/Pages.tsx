// The workspace's own pages, by route: #/settings, #/agents and #/harness/<id> (issue #30).
// Kept apart from App.tsx, which only asks here whether the route is one of them.
import type { VNode } from "preact";
import { AgentsPage, HarnessPage } from "./HarnessPage";
import { SettingsPage } from "./RoomSettings";

export function workspacePage(route: string): VNode | null {
  if (route === "#/settings") return <SettingsPage />;
  if (route === "#/agents") return <AgentsPage />;
  if (route.startsWith("#/harness/")) {
    const id = decodeURIComponent(route.slice("#/harness/".length));
    return <HarnessPage key={id} harnessId={id} />;
  }
  return null;
}
