// #/profile: a person's own name and time zone (docs/adr/0125, 0135). The time zone is an
// IANA name (Europe/Lisbon); the room note's "time now" and notifications' quiet hours
// read it. Other settings of one's own (notifications) may be shown on this page too.
import { useEffect, useState } from "preact/hooks";
import { ApiError, type Profile } from "../api";
import { useStore } from "./hooks";

/** The zones this browser knows, for the list to pick from (empty where it cannot say). */
export function knownZones(): string[] {
  const intl = Intl as unknown as { supportedValuesOf?: (key: string) => string[] };
  try {
    return intl.supportedValuesOf ? intl.supportedValuesOf("timeZone") : [];
  } catch {
    return [];
  }
}

export function browserZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

export function ProfilePage() {
  const store = useStore();
  const [profile, setProfile] = useState<Profile | null>(null);
  const [name, setName] = useState("");
  const [zone, setZone] = useState("");
  const [saving, setSaving] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  useEffect(() => {
    void store.api?.me().then(
      (p) => {
        setProfile(p);
        setName(p.name);
        setZone(p.time_zone ?? "");
      },
      (err: Error) => setError(err.message),
    );
  }, [store.api]);
  if (!profile) return <section class="page" aria-label="Profile">{error ? <p class="error">{error}</p> : <p class="muted">Loading…</p>}</section>;
  const here = browserZone();
  const changed: { name?: string; time_zone?: string } = {};
  if (name.trim() && name.trim() !== profile.name) changed.name = name.trim();
  if (zone.trim() && zone.trim() !== (profile.time_zone ?? "")) changed.time_zone = zone.trim();
  return (
    <section class="page" aria-label="Profile">
      <h1>
        <a class="back icon" href="#/" aria-label="Back to rooms">
          ←
        </a>{" "}
        Your profile
      </h1>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          setSaving(true);
          setError(null);
          setSaved(false);
          try {
            const done = await store.api!.changeMe(changed);
            setProfile({ ...profile, name: done.name ?? profile.name, time_zone: done.time_zone ?? profile.time_zone });
            setSaved(true);
          } catch (err) {
            setError(err instanceof ApiError ? err.message : (err as Error).message);
          }
          setSaving(false);
        }}
      >
        <label for="profile-name">Your name</label>
        <input id="profile-name" name="name" maxLength={80} required value={name} onInput={(e) => setName(e.currentTarget.value)} />
        <label for="profile-zone">Your time zone</label>
        <input id="profile-zone" name="time_zone" list="profile-zones" placeholder={here} value={zone} onInput={(e) => setZone(e.currentTarget.value)} />
        <datalist id="profile-zones">
          {knownZones().map((z) => (
            <option key={z} value={z} />
          ))}
        </datalist>
        {zone !== here && (
          <p class="muted small">
            This browser says {here}.{" "}
            <button type="button" class="link" onClick={() => setZone(here)}>
              Use it
            </button>
          </p>
        )}
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        {saved && (
          <p class="muted" role="status">
            Saved.
          </p>
        )}
        <button type="submit" class="primary" disabled={saving || Object.keys(changed).length === 0}>
          {saving ? "Saving…" : "Save"}
        </button>
      </form>
      <p class="muted small">
        Your role here: {profile.role}. Your devices are on <a href="#/devices">Devices</a>.
      </p>
    </section>
  );
}
