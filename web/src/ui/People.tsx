// Signing in by invite, the Devices page and the People page (docs/adr/0125).
import { useEffect, useState } from "preact/hooks";
import { ApiError, unsigned, type Device, type Invite } from "../api";
import { useStore } from "./hooks";
import { deviceName } from "../device";
import { addPasskey, passkeysOffered, passkeyWords } from "../passkey";
import { heirsFor } from "../people";
import { ProviderButton } from "./SignInProvider";

const ROLES = ["member", "guest", "admin"] as const;

function when(ts: string | null): string {
  if (!ts) return "never";
  return new Date(ts).toLocaleString(undefined, { month: "short", day: "numeric", hour: "numeric", minute: "2-digit" });
}

/** #/invite/<secret>: what the invite is for, and one button that pairs this browser. */
export function InviteScreen(props: { secret: string }) {
  const store = useStore();
  const [preview, setPreview] = useState<{ workspace_name: string; name: string; role: string; pairing: boolean } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    unsigned<{ workspace_name: string; name: string; role: string; pairing: boolean }>("/v1/invites/preview", { invite: props.secret }).then(setPreview, (err: Error) =>
      setError(err.message),
    );
  }, [props.secret]);
  return (
    <main class="signin">
      <div class="card-box" data-testid="invite">
        {preview ? (
          <>
            <h1>{preview.pairing ? `Pair this browser` : `Join ${preview.workspace_name}`}</h1>
            <p>
              {preview.pairing
                ? `This browser becomes one of ${preview.name}'s devices in ${preview.workspace_name}.`
                : `You are invited as ${preview.name}, ${preview.role === "guest" ? "a guest" : `${preview.role === "admin" ? "an" : "a"} ${preview.role}`}.`}{" "}
              This browser keeps a key of its own that never leaves it; there is no password or token to copy.
            </p>
          </>
        ) : (
          <h1>{error ? "This invite can't be used" : "Reading the invite…"}</h1>
        )}
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        {preview && (
          <button
            type="button"
            class="primary"
            disabled={busy}
            onClick={async () => {
              setBusy(true);
              try {
                await store.acceptInvite(props.secret);
                location.hash = "";
              } catch (err) {
                setError((err as Error).message);
                setBusy(false);
              }
            }}
          >
            {busy ? "Joining…" : preview.pairing ? "Pair this browser" : "Join"}
          </button>
        )}
      </div>
    </main>
  );
}

/** The first screen with nobody signed in: an invite link, a pairing code, or (advanced) a token. */
export function SignIn() {
  const store = useStore();
  const [token, setToken] = useState("");
  const [code, setCode] = useState("");
  const [busy, setBusy] = useState(false);
  return (
    <main class="signin">
      <div class="card-box">
        <h1>Sign in to Chips</h1>
        <p>Open the invite link you were sent: it signs this browser in. On another device of yours, ask for a pairing code (Devices) and type it here.</p>
        {store.signInError && (
          <p class="error" role="alert">
            {store.signInError}
          </p>
        )}
        <ProviderButton />
        {passkeysOffered() && (
          <p>
            <button type="button" data-testid="passkey-sign-in" onClick={() => void store.signInWithPasskey()}>
              Use a passkey
            </button>
          </p>
        )}
        <form
          onSubmit={(e) => {
            e.preventDefault();
            location.hash = `#/invite/${encodeURIComponent(code.trim())}`;
          }}
        >
          <label for="code">Pairing code</label>
          <input id="code" name="code" autocomplete="off" placeholder="ABCD-EFGH" value={code} onInput={(e) => setCode(e.currentTarget.value)} />
          <button type="submit" disabled={!code.trim()}>
            Use the code
          </button>
        </form>
        <details class="advanced">
          <summary>Sign in with a token instead</summary>
          <form
            onSubmit={async (e) => {
              e.preventDefault();
              setBusy(true);
              await store.signIn(token);
              setBusy(false);
            }}
          >
            <p class="muted">For scripts and operators: a person token or API key (it starts with chips_pt_). It is kept in this browser only.</p>
            <label for="token">Your token</label>
            <input id="token" name="token" type="password" autocomplete="off" required value={token} onInput={(e) => setToken(e.currentTarget.value)} />
            <button type="submit" class="primary" disabled={busy || !token.trim()}>
              {busy ? "Signing in…" : "Sign in"}
            </button>
          </form>
        </details>
      </div>
    </main>
  );
}

function DeviceRows(props: { devices: Device[]; onRevoke: (d: Device) => void }) {
  if (props.devices.length === 0) return <p class="muted">No devices.</p>;
  return (
    <ul class="devices" data-testid="devices">
      {props.devices.map((d) => (
        <li key={d.id} data-device={d.id}>
          <div>
            <strong>{d.name}</strong> {d.current && <span class="muted">(this one)</span>}
            <div class="muted small">
              {d.kind === "api_key" ? "API key" : d.kind === "token" ? "token" : d.kind === "cli" ? "command line" : d.kind === "passkey" ? "passkey" : "browser"} · paired {when(d.created_at)} · last seen {when(d.last_seen)}
              {d.expires_at ? ` · expires ${when(d.expires_at)}` : ""}
            </div>
            {d.user_agent && <div class="muted small">{d.user_agent}</div>}
          </div>
          <button type="button" onClick={() => props.onRevoke(d)} aria-label={`Revoke ${d.name}`}>
            Revoke
          </button>
        </li>
      ))}
    </ul>
  );
}

/** #/devices: this person's devices and keys; revoke one; a pairing code for another. */
export function DevicesPage() {
  const store = useStore();
  const [devices, setDevices] = useState<Device[]>([]);
  const [code, setCode] = useState<{ code: string; expires_at: string } | null>(null);
  const [passkey, setPasskey] = useState<string | null>(null);
  const load = () => void store.api?.devices().then((r) => setDevices(r.devices), (err: Error) => store.toast(err.message));
  useEffect(load, [store.api]);
  return (
    <section class="page" aria-label="Devices">
      <h1>
        <a class="back icon" href="#/" aria-label="Back to rooms">
          ←
        </a>{" "}
        Your devices
      </h1>
      <DeviceRows
        devices={devices}
        onRevoke={async (d) => {
          try {
            await store.api!.revokeDevice(d.id);
            if (d.current) store.signOut();
            else load();
          } catch (err) {
            store.toast((err as ApiError).message);
          }
        }}
      />
      {passkeysOffered() && (
        <>
          <h2>A passkey</h2>
          <p class="muted">
            Make a passkey for Chips with this browser, your phone or a security key: later you sign in with it, here or on another device that
            has it, with no link or code.
          </p>
          <button
            type="button"
            onClick={async () => {
              try {
                const made = await addPasskey(store.api!, `Passkey (${deviceName(navigator.userAgent)})`);
                setPasskey(`${made.name} is one of your devices now.`);
                load();
              } catch (err) {
                store.toast(err instanceof ApiError ? err.message : passkeyWords(err));
              }
            }}
          >
            Add a passkey
          </button>
          {passkey && (
            <p role="status" data-testid="passkey-added">
              {passkey}
            </p>
          )}
        </>
      )}
      <h2>Pair another device</h2>
      <p class="muted">A code for a browser or the command line (chips login --code), valid for ten minutes.</p>
      <button type="button" onClick={async () => setCode(await store.api!.pairingCode())}>
        Show a pairing code
      </button>
      {code && (
        <p data-testid="pairing-code">
          <strong class="code">{code.code}</strong> <span class="muted">until {when(code.expires_at)}</span>
        </p>
      )}
    </section>
  );
}

/** #/people: who is in the workspace; for an owner or admin, invites and others' devices. */
export function PeoplePage() {
  const store = useStore();
  const admin = store.me?.role === "owner" || store.me?.role === "admin";
  const [name, setName] = useState("");
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<string>("member");
  const [link, setLink] = useState<string | null>(null);
  const [invites, setInvites] = useState<Invite[]>([]);
  const [open, setOpen] = useState<string | null>(null);
  const [devices, setDevices] = useState<Device[]>([]);
  // The person being deactivated, and who takes the rooms they own (docs/adr/0144).
  const [leaving, setLeaving] = useState<string | null>(null);
  const [heir, setHeir] = useState("");
  const loadInvites = () => {
    if (admin) void store.api?.invites().then((r) => setInvites(r.invites), () => undefined);
  };
  useEffect(loadInvites, [store.api, admin]);
  const people = [...store.participants.values()].filter((p) => p.kind === "person");
  const showDevices = async (pid: string) => {
    setOpen(pid);
    setDevices((await store.api!.devices(pid)).devices);
  };
  return (
    <section class="page" aria-label="People">
      <h1>
        <a class="back icon" href="#/" aria-label="Back to rooms">
          ←
        </a>{" "}
        People
      </h1>
      <ul class="people" data-testid="people">
        {people.map((p) => (
          <li key={p.participant_id} data-person={p.participant_id}>
            <span>
              <strong>{p.name}</strong> <span class="muted">{p.role}</span>
              {p.active === false && <span class="muted"> · deactivated</span>}
            </span>
            {admin && p.role !== "owner" && p.participant_id !== store.me?.id && (
              <span class="person-acts">
                <select
                  aria-label={`Role of ${p.name}`}
                  value={p.role ?? "member"}
                  onChange={async (e) => {
                    try {
                      await store.api!.changePerson(p.participant_id, { role: e.currentTarget.value });
                    } catch (err) {
                      store.toast((err as ApiError).message);
                    }
                  }}
                >
                  {ROLES.map((r) => (
                    <option key={r} value={r}>
                      {r}
                    </option>
                  ))}
                </select>
                <button
                  type="button"
                  onClick={async () => {
                    if (p.active !== false) {
                      setLeaving(p.participant_id);
                      setHeir(store.me?.id ?? "");
                      return;
                    }
                    try {
                      await store.api!.changePerson(p.participant_id, { active: true });
                    } catch (err) {
                      store.toast((err as ApiError).message);
                    }
                  }}
                >
                  {p.active === false ? "Reactivate" : "Deactivate"}
                </button>
              </span>
            )}
            {admin && (
              <button type="button" onClick={() => void showDevices(p.participant_id)} aria-label={`Devices of ${p.name}`}>
                Devices
              </button>
            )}
            {leaving === p.participant_id && (
              <form
                class="deactivate-form"
                aria-label={`Deactivate ${p.name}`}
                onSubmit={async (e) => {
                  e.preventDefault();
                  try {
                    await store.api!.changePerson(p.participant_id, { active: false, rooms_to: heir });
                    setLeaving(null);
                  } catch (err) {
                    store.toast((err as ApiError).message);
                  }
                }}
              >
                <p>
                  Deactivate {p.name}? Every device, key and harness of theirs is signed out, and what they said stays. The group
                  rooms they own go to the person you choose.
                </p>
                <label>
                  Their rooms go to{" "}
                  <select aria-label="Their rooms go to" value={heir} onChange={(e) => setHeir(e.currentTarget.value)}>
                    {heirsFor(people, p.participant_id).map((h) => (
                      <option key={h.participant_id} value={h.participant_id}>
                        {h.name}
                        {h.participant_id === store.me?.id ? " (you)" : ""}
                      </option>
                    ))}
                  </select>
                </label>
                <span class="person-acts">
                  <button type="submit">Deactivate {p.name}</button>
                  <button type="button" onClick={() => setLeaving(null)}>
                    Cancel
                  </button>
                </span>
              </form>
            )}
            {open === p.participant_id && (
              <DeviceRows
                devices={devices}
                onRevoke={async (d) => {
                  try {
                    await store.api!.revokeDevice(d.id);
                    await showDevices(p.participant_id);
                  } catch (err) {
                    store.toast((err as ApiError).message);
                  }
                }}
              />
            )}
          </li>
        ))}
      </ul>
      {admin && (
        <>
          <h2>Invite somebody</h2>
          <form
            class="invite-form"
            onSubmit={async (e) => {
              e.preventDefault();
              try {
                const made = await store.api!.invite({ name: name.trim(), email: email.trim() || undefined, role });
                setLink(made.url);
                setName("");
                setEmail("");
                loadInvites();
              } catch (err) {
                store.toast((err as ApiError).message);
              }
            }}
          >
            <label for="invite-name">Name</label>
            <input id="invite-name" required maxLength={80} value={name} onInput={(e) => setName(e.currentTarget.value)} />
            <label for="invite-email">Email (optional)</label>
            <input id="invite-email" type="email" value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
            <label for="invite-role">Role</label>
            <select id="invite-role" value={role} onChange={(e) => setRole(e.currentTarget.value)}>
              {ROLES.map((r) => (
                <option key={r} value={r}>
                  {r}
                </option>
              ))}
            </select>
            <button type="submit" class="primary" disabled={!name.trim()}>
              Invite
            </button>
          </form>
          {link && (
            <p>
              Send this link to them; it works once, for seven days:{" "}
              <input class="invite-link" data-testid="invite-link" readOnly value={link} onFocus={(e) => e.currentTarget.select()} aria-label="Invite link" />
            </p>
          )}
          <h2>Open invites</h2>
          {invites.length === 0 ? (
            <p class="muted">None.</p>
          ) : (
            <ul class="invites" data-testid="invites">
              {invites.map((i) => (
                <li key={i.id}>
                  <span>
                    <strong>{i.name}</strong> <span class="muted">{i.role} · until {when(i.expires_at)}</span>
                  </span>
                  <button
                    type="button"
                    onClick={async () => {
                      await store.api!.withdrawInvite(i.id!);
                      loadInvites();
                    }}
                    aria-label={`Withdraw the invite of ${i.name}`}
                  >
                    Withdraw
                  </button>
                </li>
              ))}
            </ul>
          )}
        </>
      )}
    </section>
  );
}
