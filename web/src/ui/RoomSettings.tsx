// #/settings: the workspace's referee (stop, hold, circles) and the caps on files per kind,
// shown to everyone and changed by an owner or admin (docs/product/websocket.md, the referee;
// docs/product/messages.md, Attachments). The door decides; a refusal is shown as it says it.
import { useEffect, useState } from "preact/hooks";
import { sizeWords } from "../files";
import { newKey } from "../live";
import { CAP_KINDS, capsEvent, capsForm, mayChangeSettings, refereeEvent, refereeForm, refereeWords, type CapsForm, type Referee, type RefereeForm } from "../settings";
import { useStore } from "./hooks";
import "./pages.css";

/** A refusal as a sentence: the server's words, with a capital and a full stop. */
export function refusal(err: unknown): string {
  const m = (err as Error).message || "Chips refused it.";
  const s = m.charAt(0).toUpperCase() + m.slice(1);
  return /[.!?]$/.test(s) ? s : `${s}.`;
}

export function PageBack() {
  return (
    <a class="page-back" href="#/">
      ← Rooms
    </a>
  );
}

export function SettingsPage() {
  const store = useStore();
  const may = mayChangeSettings(store.me?.role);
  return (
    <section class="page" aria-labelledby="settings-title" data-testid="settings">
      <PageBack />
      <h1 id="settings-title">Workspace settings</h1>
      {!may && (
        <p class="muted" data-testid="settings-readonly">
          Only an owner or admin of the workspace changes these; here they are as they are set.
        </p>
      )}
      <RefereeSettings may={may} />
      <CapsSettings may={may} />
    </section>
  );
}

function RefereeSettings(props: { may: boolean }) {
  const store = useStore();
  const [current, setCurrent] = useState<Referee | null>(null);
  const [form, setForm] = useState<RefereeForm | null>(null);
  const [error, setError] = useState<{ field: string | null; text: string } | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const load = async () => {
    try {
      const r = await store.api!.call<Referee>("GET", "/v1/referee");
      setCurrent(r);
      setForm(refereeForm(r));
    } catch (err) {
      setError({ field: null, text: refusal(err) });
    }
  };
  useEffect(() => void load(), [store.api]);
  const set = (change: Partial<RefereeForm>) => {
    setForm({ ...form!, ...change });
    setSaved(null);
  };
  const invalid = (field: string) => (error?.field === field ? { "aria-invalid": true, "aria-describedby": "referee-error" } : {});
  return (
    <form
      class="settings-form"
      aria-labelledby="referee-title"
      data-testid="referee-form"
      onSubmit={async (e) => {
        e.preventDefault();
        if (!form) return;
        const checked = refereeEvent(form);
        if (!checked.ok) {
          setError({ field: checked.field, text: checked.error });
          return;
        }
        setBusy(true);
        setError(null);
        try {
          await store.api!.post({ ...checked.value, idempotency_key: newKey("referee") });
          const r = await store.api!.call<Referee>("GET", "/v1/referee");
          setCurrent(r);
          setForm(refereeForm(r));
          setSaved(`Saved. ${refereeWords(r)}`);
        } catch (err) {
          setError({ field: null, text: `Not saved: ${refusal(err)}` });
        } finally {
          setBusy(false);
        }
      }}
    >
      <h2 id="referee-title">The referee</h2>
      <p class="muted">
        When agents talk among themselves, Chips counts what they say to each other since a person last said or did something in the room. At the stop it tells them to stop; past the hold it
        keeps their messages for nobody until a person speaks.
      </p>
      {current && (
        <p data-testid="referee-now">
          <strong>Now:</strong> {refereeWords(current)}
        </p>
      )}
      {form && (
        <fieldset disabled={!props.may || busy}>
          <legend class="sr-only">The referee's settings</legend>
          <label for="referee-stop">Tell them to stop after (messages)</label>
          <div class="row">
            <input id="referee-stop" inputMode="numeric" autocomplete="off" disabled={form.stopNever} value={form.stop} onInput={(e) => set({ stop: e.currentTarget.value })} {...invalid("stop")} />
            <label class="check">
              <input type="checkbox" checked={form.stopNever} onChange={(e) => set({ stopNever: e.currentTarget.checked })} />
              Never<span class="sr-only"> tell them to stop</span>
            </label>
          </div>
          <label for="referee-hold">Hold their messages after (messages)</label>
          <div class="row">
            <input id="referee-hold" inputMode="numeric" autocomplete="off" disabled={form.holdNever} value={form.hold} onInput={(e) => set({ hold: e.currentTarget.value })} {...invalid("hold")} />
            <label class="check">
              <input type="checkbox" checked={form.holdNever} onChange={(e) => set({ holdNever: e.currentTarget.checked })} />
              Never<span class="sr-only"> hold their messages</span>
            </label>
          </div>
          <label class="check">
            <input type="checkbox" checked={form.circles} onChange={(e) => set({ circles: e.currentTarget.checked })} />
            Stop them when they go in a circle
          </label>
          {props.may && (
            <div class="row">
              <button type="submit" class="primary">
                {busy ? "Saving…" : "Save the referee"}
              </button>
            </div>
          )}
        </fieldset>
      )}
      {error && (
        <p class="error" role="alert" id="referee-error" data-testid="referee-error">
          {error.text}
        </p>
      )}
      {saved && (
        <p role="status" class="saved" data-testid="referee-saved">
          {saved}
        </p>
      )}
    </form>
  );
}

function CapsSettings(props: { may: boolean }) {
  const store = useStore();
  const caps = store.caps;
  const [form, setForm] = useState<CapsForm | null>(null);
  const [error, setError] = useState<{ field: string | null; text: string } | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    if (!store.caps) void store.loadCaps();
  }, [store.api]);
  // What is set, until the person starts typing (and again once saved).
  const shown = form ?? (caps ? capsForm(caps) : null);
  if (!store.features.attachments && !caps) return null;
  return (
    <form
      class="settings-form"
      aria-labelledby="caps-title"
      data-testid="caps-form"
      onSubmit={async (e) => {
        e.preventDefault();
        if (!shown || !caps) return;
        const checked = capsEvent(shown, caps.ceiling_bytes);
        if (!checked.ok) {
          setError({ field: checked.field, text: checked.error });
          return;
        }
        setBusy(true);
        setError(null);
        try {
          await store.api!.post({ ...checked.value, idempotency_key: newKey("caps") });
          await store.loadCaps();
          setForm(null);
          setSaved("Saved. A file over its cap is refused before it is sent.");
        } catch (err) {
          setError({ field: null, text: `Not saved: ${refusal(err)}` });
        } finally {
          setBusy(false);
        }
      }}
    >
      <h2 id="caps-title">Files</h2>
      <p class="muted">
        The most a file of each kind may weigh here. Leave one blank for no cap of its own: then only this server's ceiling
        {caps ? `, ${sizeWords(caps.ceiling_bytes)},` : ""} holds it.
      </p>
      {shown && caps && (
        <fieldset disabled={!props.may || busy}>
          <legend class="sr-only">Caps per kind</legend>
          <div class="caps-grid">
            {CAP_KINDS.map(({ field, label }) => (
              <div key={field}>
                <label for={`cap-${field}`}>{label}</label>
                <input
                  id={`cap-${field}`}
                  autocomplete="off"
                  placeholder={`up to ${sizeWords(caps.ceiling_bytes)}`}
                  value={shown[field]}
                  onInput={(e) => {
                    setForm({ ...shown, [field]: e.currentTarget.value });
                    setSaved(null);
                  }}
                  {...(error?.field === field ? { "aria-invalid": true, "aria-describedby": "caps-error" } : {})}
                />
              </div>
            ))}
          </div>
          {props.may && (
            <div class="row">
              <button type="submit" class="primary">
                {busy ? "Saving…" : "Save the caps"}
              </button>
            </div>
          )}
        </fieldset>
      )}
      {error && (
        <p class="error" role="alert" id="caps-error" data-testid="caps-error">
          {error.text}
        </p>
      )}
      {saved && (
        <p role="status" class="saved" data-testid="caps-saved">
          {saved}
        </p>
      )}
    </form>
  );
}

