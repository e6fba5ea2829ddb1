import { useState } from "preact/hooks";
import { useRoute, useStore } from "./hooks";
import { RoomList } from "./RoomList";
import { RoomView } from "./Room";

export function App() {
  const store = useStore();
  const route = useRoute();
  if (!store.token) return <SignIn />;
  // #/room/<id>, or #/room/<id>/at/<message id> to open the room at that line (a search hit).
  const [roomPart, atPart] = route.startsWith("#/room/") ? route.slice("#/room/".length).split("/at/") : [];
  const roomId = roomPart ? decodeURIComponent(roomPart) : null;
  const at = atPart ? decodeURIComponent(atPart) : null;
  const reconnecting = store.state === "reconnecting" || (store.state === "connecting" && store.me !== null);
  return (
    <div class={`shell${roomId ? " in-room" : ""}${reconnecting ? " offline" : ""}`}>
      {reconnecting && (
        <div class="banner" role="status" data-testid="reconnecting">
          Reconnecting… what you write is kept and sent when Chips is back.
        </div>
      )}
      <RoomList current={roomId} showArchived={route === "#/archived"} />
      <main class="main" aria-label="Room">
        {roomId ? (
          <RoomView key={roomId} spaceId={roomId} at={at} />
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

function SignIn() {
  const store = useStore();
  const [token, setToken] = useState("");
  const [busy, setBusy] = useState(false);
  return (
    <main class="signin">
      <form
        class="card-box"
        onSubmit={async (e) => {
          e.preventDefault();
          setBusy(true);
          await store.signIn(token);
          setBusy(false);
        }}
      >
        <h1>Sign in to Chips</h1>
        <p>Paste your person token (it starts with chips_pt_). It is kept in this browser only.</p>
        <label for="token">Your token</label>
        <input id="token" name="token" type="password" autocomplete="off" required value={token} onInput={(e) => setToken(e.currentTarget.value)} />
        {store.signInError && (
          <p class="error" role="alert">
            {store.signInError}
          </p>
        )}
        <button type="submit" class="primary" disabled={busy || !token.trim()}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </main>
  );
}
