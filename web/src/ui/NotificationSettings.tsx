// Notification preferences (issue #29): email (off, at once, after a delay, a daily digest),
// push to this browser, and quiet hours in the person's own time. Reached from the foot of
// the room list (#/notifications); a page of its own, so a profile page can hold it too.
import { useEffect, useState } from "preact/hooks";
import { inbox } from "../inbox";
import { DEFAULT_PREFS, prefsProblem, type EmailMode, type NtfPrefs } from "../notifications";
import { useStore } from "./hooks";

const EMAIL: [EmailMode, string][] = [
  ["off", "Never"],
  ["immediate", "At once"],
  ["delayed", "When I have not seen it in the app after a while"],
  ["digest", "Once a day, as a digest"],
];

const PUSH_WORDS: Record<string, string> = {
  unsupported: "This browser can't show notifications.",
  denied: "This browser was told not to show Chips's notifications; allow them in its site settings.",
  failed: "This browser's push service can't be reached. Chips still shows notifications while it is open here.",
  on: "This browser gets them.",
  off: "",
};

export function NotificationSettings() {
  const store = useStore();
  useEffect(() => {
    if (store.api) void inbox.loadPrefs();
  }, [store.api]);
  const prefs = inbox.prefs;
  return (
    <section class="page" aria-label="Notifications">
      <h1>
        <a class="back icon" href="#/" aria-label="Back to rooms">
          ←
        </a>{" "}
        Notifications
      </h1>
      {prefs ? <PrefsForm key={JSON.stringify(prefs)} saved={prefs} /> : <p class="muted">Reading your settings…</p>}
    </section>
  );
}

function PrefsForm(props: { saved: NtfPrefs }) {
  const store = useStore();
  const [p, setP] = useState<NtfPrefs>({ ...DEFAULT_PREFS, ...props.saved });
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const problem = prefsProblem(p);
  const minutes = Math.round(p.email_delay_seconds / 60);
  // This browser's own zone, offered where the one kept differs (quiet hours are in it).
  const here = Intl.DateTimeFormat().resolvedOptions().timeZone;
  return (
    <form
      data-testid="notification-settings"
      onSubmit={async (e) => {
        e.preventDefault();
        if (problem) return;
        setBusy(true);
        try {
          if (p.push && inbox.push !== "on") await inbox.enablePush();
          if (!p.push && inbox.push === "on") await inbox.disablePush();
          await inbox.savePrefs(p);
          setError(null);
          store.toast("Notification settings saved.");
        } catch (err) {
          setError((err as Error).message);
        } finally {
          setBusy(false);
        }
      }}
    >
      <fieldset>
        <legend>Email</legend>
        {EMAIL.map(([mode, words]) => (
          <label key={mode} class="choice">
            <input type="radio" name="email" value={mode} checked={p.email === mode} onChange={() => setP({ ...p, email: mode })} /> {words}
          </label>
        ))}
        {p.email === "delayed" && (
          <div class="row">
            <label for="email-delay">After (minutes)</label>
            <input
              id="email-delay"
              type="number"
              min={1}
              max={10080}
              value={minutes}
              onInput={(e) => setP({ ...p, email_delay_seconds: Math.round(Number(e.currentTarget.value) * 60) })}
            />
          </div>
        )}
        {p.email !== "off" && (
          <div class="row">
            <label for="email-address">Address</label>
            <input
              id="email-address"
              type="email"
              placeholder="the one you were invited at"
              value={p.email_address ?? ""}
              onInput={(e) => setP({ ...p, email_address: e.currentTarget.value || null })}
            />
          </div>
        )}
      </fieldset>
      <fieldset>
        <legend>Browser</legend>
        <label class="choice">
          <input type="checkbox" checked={p.push} onChange={(e) => setP({ ...p, push: e.currentTarget.checked })} data-testid="push-toggle" /> Push notifications
        </label>
        {PUSH_WORDS[inbox.push] && (
          <p class="small muted" data-testid="push-state">
            {PUSH_WORDS[inbox.push]}
          </p>
        )}
      </fieldset>
      <fieldset>
        <legend>Quiet hours</legend>
        <label class="choice">
          <input
            type="checkbox"
            checked={p.quiet_hours !== null}
            onChange={(e) => setP({ ...p, quiet_hours: e.currentTarget.checked ? { start: "22:00", end: "07:00" } : null })}
            data-testid="quiet-toggle"
          />{" "}
          Nothing pushed or mailed at night
        </label>
        {p.quiet_hours && (
          <div class="row">
            <label for="quiet-start">From</label>
            <input id="quiet-start" type="time" value={p.quiet_hours.start} onInput={(e) => setP({ ...p, quiet_hours: { ...p.quiet_hours!, start: e.currentTarget.value } })} />
            <label for="quiet-end">to</label>
            <input id="quiet-end" type="time" value={p.quiet_hours.end} onInput={(e) => setP({ ...p, quiet_hours: { ...p.quiet_hours!, end: e.currentTarget.value } })} />
          </div>
        )}
      </fieldset>
      <div class="row">
        <label for="time-zone">Time zone</label>
        <input id="time-zone" value={p.time_zone ?? ""} onInput={(e) => setP({ ...p, time_zone: e.currentTarget.value })} />
        {here && here !== p.time_zone && (
          <button type="button" class="link" onClick={() => setP({ ...p, time_zone: here })}>
            Use {here}
          </button>
        )}
      </div>
      {(problem || error) && (
        <p class="error" role="alert">
          {problem ?? error}
        </p>
      )}
      <div class="row end">
        <button type="submit" class="primary" disabled={busy || !!problem}>
          Save
        </button>
      </div>
    </form>
  );
}
