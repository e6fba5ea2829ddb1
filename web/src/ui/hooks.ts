import { useEffect, useLayoutEffect, useState } from "preact/hooks";
import { store, Store } from "../store";

/** Re-render on every change of the store. */
export function useStore(): Store {
  const [, setVersion] = useState(store.version);
  const read = store.version; // what the first render drew from
  useEffect(() => {
    const update = () => setVersion(store.version);
    const off = store.subscribe(update);
    // The effect runs after the paint: a change made in between (boot() finding no device
    // on a busy machine, say) told nobody, and the app stayed blank. Catch up on it here.
    if (store.version !== read) update();
    return off;
  }, []);
  return store;
}

/** The route in the URL's hash: #/room/<id>, #/archived, or the list. */
export function useRoute(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    window.addEventListener("hashchange", on);
    // A child's effect runs before this one: one that moved the hash already (the
    // provider's return, taken once) is read here, or the route would stay where it was.
    on();
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

const MENU_OPENED = "chips-menu-opened";

/**
 * A pop-up menu's state: one menu open on the page at a time (opening one closes the
 * others), and an open one closes on Escape wherever the focus is, or on a press outside
 * `wrap` (its button and the menu).
 */
export function useMenu(wrap: { current: HTMLElement | null }): [boolean, (open: boolean) => void] {
  const [open, setOpen] = useState(false);
  const [self] = useState(() => Symbol("menu"));
  useEffect(() => {
    const others = (e: Event) => (e as CustomEvent<symbol>).detail !== self && setOpen(false);
    window.addEventListener(MENU_OPENED, others);
    return () => window.removeEventListener(MENU_OPENED, others);
  }, []);
  // A layout effect: listening from the moment the menu is drawn, not a frame later.
  useLayoutEffect(() => {
    if (!open) return;
    const key = (e: KeyboardEvent) => {
      if (e.key !== "Escape") return;
      setOpen(false);
      // Back to the button that opened it (a wrap may hold several, one for each list).
      const button = wrap.current?.querySelector<HTMLElement>('[aria-haspopup][aria-expanded="true"]') ?? wrap.current?.querySelector<HTMLElement>("[aria-haspopup]");
      button?.focus();
    };
    const press = (e: PointerEvent) => wrap.current && !wrap.current.contains(e.target as Node) && setOpen(false);
    document.addEventListener("keydown", key);
    document.addEventListener("pointerdown", press);
    return () => {
      document.removeEventListener("keydown", key);
      document.removeEventListener("pointerdown", press);
    };
  }, [open]);
  const set = (next: boolean) => {
    if (next) window.dispatchEvent(new CustomEvent(MENU_OPENED, { detail: self }));
    setOpen(next);
  };
  return [open, set];
}
