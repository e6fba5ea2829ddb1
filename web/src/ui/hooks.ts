import { useEffect, useState } from "preact/hooks";
import { store, Store } from "../store";

/** Re-render on every change of the store. */
export function useStore(): Store {
  const [, setVersion] = useState(0);
  useEffect(() => store.subscribe(() => setVersion(store.version)), []);
  return store;
}

/** The route in the URL's hash: #/room/<id>, #/archived, or the list. */
export function useRoute(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    window.addEventListener("hashchange", on);
    return () => window.removeEventListener("hashchange", on);
  }, []);
  return hash;
}

export function formatTime(ts: string): string {
  const d = new Date(ts);
  const today = new Date();
  const sameDay = d.toDateString() === today.toDateString();
  return sameDay
    ? d.toLocaleTimeString(undefined, { hour: "numeric", minute: "2-digit" })
    : d.toLocaleDateString(undefined, { month: "short", day: "numeric" }) + " " + d.toLocaleTimeString(undefined, { hour: "numeric", minute: "2-digit" });
}
