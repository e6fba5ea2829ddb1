import { inviteIn } from "../device";
import { useRoute, useStore } from "./hooks";
import { InboxPage } from "./Inbox";
import { NotificationSettings } from "./NotificationSettings";
import { workspacePage } from "./Pages";
import { DevicesPage, InviteScreen, PeoplePage, SignIn } from "./People";
import { RoomList } from "./RoomList";
import { takesThePhone } from "../people";
import { ProfilePage } from "./Profile";
import { RoomView } from "./Room";
import { isProviderReturn, ProviderReturn } from "./SignInProvider";

export function App() {
  const store = useStore();
  const route = useRoute();
  const invite = inviteIn(route);
  if (invite) return <InviteScreen secret={invite} />;
  if (isProviderReturn(route)) return <ProviderReturn route={route} />;
  if (store.booting) return null;
  if (!store.signedIn) return <SignIn />;
  // #/room/<id>, or #/room/<id>/at/<message id> to open the room at that line (a search hit).
  const [roomPart, atPart] = route.startsWith("#/room/") ? route.slice("#/room/".length).split("/at/") : [];
  const roomId = roomPart ? decodeURIComponent(roomPart) : null;
  const at = atPart ? decodeURIComponent(atPart) : null;
  const page = roomId ? null : workspacePage(route);
  const reconnecting = store.state === "reconnecting" || (store.state === "connecting" && store.me !== null);
  return (
    <div class={`shell${takesThePhone(route, roomId, page !== null) ? " in-room" : ""}${reconnecting ? " offline" : ""}`}>
      {reconnecting && (
        <div class="banner" role="status" data-testid="reconnecting">
          Reconnecting… what you write is kept and sent when Chips is back.
        </div>
      )}
      <RoomList current={roomId} showArchived={route === "#/archived"} inbox={route === "#/inbox"} />
      <main class="main" aria-label="Room">
        {roomId ? (
          <RoomView key={roomId} spaceId={roomId} at={at} />
        ) : page ? (
          page
        ) : route === "#/people" ? (
          <PeoplePage />
        ) : route === "#/devices" ? (
          <DevicesPage />
        ) : route === "#/inbox" ? (
          <InboxPage />
        ) : route === "#/notifications" ? (
          <NotificationSettings />
        ) : route === "#/profile" ? (
          <ProfilePage />
        ) : (
          <div class="empty">
            <h1>{store.me ? `Hello, ${store.me.name}` : "Connecting…"}</h1>
            <p>Pick a room on the left, or open a new one.</p>
          </div>
        )}
      </main>
      <div class="toasts" role="status" aria-live="polite">
        {store.toasts.map((t) => (
          <div class="toast" key={t.id}>
            {t.text}
            {t.undo && (
              <button type="button" class="link" onClick={t.undo}>
                Undo
              </button>
            )}
          </div>
        ))}
      </div>
    </div>
  );
}
