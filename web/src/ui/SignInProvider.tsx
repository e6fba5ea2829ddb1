// Sign-in with the team's identity provider (docs/adr/0135): the button on the sign-in
// screen, and the screen the provider sends the browser back to.
import { useEffect, useState } from "preact/hooks";
import { ApiError } from "../api";
import { signedInFrom, signInRefusedFrom } from "../device";
import { useStore } from "./hooks";

/** The provider's button, when the workspace has one. */
export function ProviderButton() {
  const store = useStore();
  const [button, setButton] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    fetch(new URL("/v1/oidc", location.origin))
      .then((r) => (r.ok ? r.json() : { enabled: false }))
      .then((info: { enabled?: boolean; button?: string }) => setButton(info.enabled ? (info.button ?? "Sign in with your team's account") : null))
      .catch(() => setButton(null));
  }, []);
  if (!button) return null;
  return (
    <p>
      <button
        type="button"
        class="primary"
        data-testid="provider-sign-in"
        disabled={busy}
        onClick={async () => {
          setBusy(true);
          try {
            await store.startProviderSignIn();
          } catch (err) {
            store.providerRefused(err instanceof ApiError ? err.message : "Chips can't be reached");
            setBusy(false);
          }
        }}
      >
        {busy ? "Going to your sign-in…" : button}
      </button>
    </p>
  );
}

/** #/signed-in/… or #/sign-in-refused/…: the provider's answer, taken once, then the app. */
export function ProviderReturn(props: { route: string }) {
  const store = useStore();
  useEffect(() => {
    const paired = signedInFrom(props.route);
    const refused = signInRefusedFrom(props.route);
    void (async () => {
      if (paired) await store.finishProviderSignIn(paired);
      else if (refused) store.providerRefused(refused.message);
      history.replaceState(null, "", "#/");
      dispatchEvent(new HashChangeEvent("hashchange"));
    })();
  }, [props.route]);
  return (
    <main class="signin">
      <div class="card-box">
        <p>Signing in…</p>
      </div>
    </main>
  );
}

export function isProviderReturn(route: string): boolean {
  return route.startsWith("#/signed-in/") || route.startsWith("#/sign-in-refused/");
}
