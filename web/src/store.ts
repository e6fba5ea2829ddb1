// The app's state: who is signed in, the rooms list, the rooms opened, and the socket.
// Everything on screen is folded from the log: HTTP reads for where to start, then each
// event from the socket once, in seq order (live.ts).
//
// The store is one class made of a part per job, each a class over the one named before it
// (all in web/src/store/): base.ts (the state, and what every part shares), rooms.ts (a room's
// reads), lists.ts (the rooms list, the directory, names and what is unread), writes.ts
// (writing and its answers), events.ts (the socket's events, folded; the fold over a room
// is fold.ts). This module is the whole: signing in, and the socket wired to the parts.
import { Api, ApiError, unsigned } from "./api";
import { deviceName, DeviceRefused, DeviceSession, forgetDevice, loadDevice, newKeys, saveDevice, savePending, takePending, type DeviceRecord, type OpenSession, type SignedIn } from "./device";
import { passkeySession, passkeyWords } from "./passkey";
import { asSentence } from "./people";
import { Live, SeqGate } from "./live";
import { TOKEN_KEY } from "./store/base";
import { Events } from "./store/events";

export type { Elsewhere, Room, Toast } from "./store/base";

export class Store extends Events {
  /** The session a passkey's sign-in opened, for the device's first requests. */
  private firstSession: OpenSession | null = null;

  // --- signing in ----------------------------------------------------------------------

  get signedIn(): boolean {
    return this.token !== null || this.device !== null;
  }

  /** Start as the device paired here, if there is one (else the token, if any). */
  async boot(): Promise<void> {
    if (!this.token) this.device = await loadDevice();
    this.booting = false;
    if (this.signedIn) this.start();
    else this.changed();
  }

  /**
   * Use an invite link (or a pairing code): this browser makes a key pair whose private
   * half it cannot export, is paired as the person's device, and keeps the pair here.
   */
  async acceptInvite(secret: string): Promise<void> {
    const { keys, publicKey } = await newKeys();
    const name = deviceName(navigator.userAgent);
    const paired = await unsigned<{ device_id: string; workspace_id: string; participant_id: string }>("/v1/invites/accept", {
      invite: secret,
      public_key: publicKey,
      device_name: name,
      kind: "browser",
    });
    const rec: DeviceRecord = { device_id: paired.device_id, workspace_id: paired.workspace_id, participant_id: paired.participant_id, name, keys };
    await saveDevice(rec);
    localStorage.removeItem(TOKEN_KEY);
    this.token = null;
    this.device = rec;
    this.signInError = null;
    this.start();
  }

  /** Sign in with the team's identity provider: this browser's key pair is made now and
   * kept as pending; the browser goes to the provider and comes back paired (docs/adr/0135). */
  async startProviderSignIn(): Promise<void> {
    const { keys, publicKey } = await newKeys();
    await savePending(keys);
    const started = await unsigned<{ url: string }>("/v1/oidc/start", { public_key: publicKey, device_name: deviceName(navigator.userAgent) });
    location.assign(started.url);
  }

  /** Back from the provider, paired: the pending key pair is this device's now. */
  async finishProviderSignIn(paired: SignedIn): Promise<void> {
    const keys = await takePending();
    if (!keys) {
      this.signInError = "This browser lost the key it made for the sign-in; sign in again.";
      this.changed();
      return;
    }
    const rec: DeviceRecord = { device_id: paired.device_id, workspace_id: paired.workspace_id, participant_id: paired.participant_id, name: deviceName(navigator.userAgent), keys };
    await saveDevice(rec);
    localStorage.removeItem(TOKEN_KEY);
    this.token = null;
    this.device = rec;
    this.signInError = null;
    this.booting = false;
    this.start();
  }

  /** Sign in with a passkey this browser holds (docs/adr/0145): its device is this one's,
   * and each later session is asked of it. */
  async signInWithPasskey(): Promise<void> {
    try {
      const s = await passkeySession();
      const rec: DeviceRecord = { device_id: s.device_id, workspace_id: s.workspace_id, participant_id: s.participant_id, name: "Passkey", passkey: s.credential_id };
      await saveDevice(rec);
      localStorage.removeItem(TOKEN_KEY);
      this.token = null;
      this.device = rec;
      this.firstSession = { token: s.token, expires_at: s.expires_at };
      this.signInError = null;
      this.start();
    } catch (err) {
      this.signInError = err instanceof ApiError ? asSentence(err.message) : passkeyWords(err);
      this.changed();
    }
  }

  providerRefused(message: string): void {
    this.signInError = asSentence(message);
    this.changed();
  }

  async signIn(token: string): Promise<void> {
    const api = new Api(token.trim());
    try {
      await api.ticket();
    } catch (err) {
      this.signInError =
        err instanceof ApiError && err.status === 401 ? "That token is not known, or was withdrawn." : `Chips did not answer: ${(err as Error).message}`;
      this.changed();
      return;
    }
    localStorage.setItem(TOKEN_KEY, token.trim());
    this.token = token.trim();
    this.signInError = null;
    this.start();
  }

  signOut(): void {
    this.live?.stop();
    localStorage.removeItem(TOKEN_KEY);
    if (this.device) void forgetDevice();
    this.token = null;
    this.device = null;
    this.me = null;
    this.live = null;
    this.api = null;
    this.spaces.clear();
    this.rooms.clear();
    this.gate = new SeqGate();
    for (const h of this.hooks.signOut) h();
    this.changed();
  }

  start(): void {
    if (!this.signedIn) return;
    const session = this.device ? new DeviceSession(this.device, this.firstSession, askPasskey) : null;
    this.firstSession = null;
    const api = new Api(session ? () => session.bearer() : this.token!);
    this.api = api;
    void this.detectFeatures();
    this.live = new Live({
      ticket: async () => (await api.ticket()).ticket,
      since: () => this.gate.last,
      onHello: async (person, workspaceId) => {
        this.me = person;
        this.workspaceId = workspaceId;
        if (this.gate.last === null) await this.loadFirst();
        this.watchDirectory();
        for (const h of this.hooks.hello) h();
      },
      onNotification: (frame) => {
        for (const h of this.hooks.notification) h(frame);
      },
      onEvents: (events) => this.apply(events),
      onAck: (key, seq) => this.acked(key, seq),
      onError: (key, code, message) => this.refused(key, code, message),
      onReceipt: (key, disposition) => this.receipt(key, disposition),
      onState: (state) => {
        this.state = state;
        if (state === "signed-out") {
          this.signInError = this.device
            ? "This device was signed out: it was revoked, or its person was. Open a new invite link, or a pairing code from another of your devices."
            : "Your token was refused. Sign in again.";
          this.signOut();
        }
        this.changed();
      },
    });
    this.live.start();
    this.changed();
  }
}

export const store = new Store();

/** A passkey device's session, asked of its passkey; a refusal reads as a device's. */
async function askPasskey(credentialId: string): Promise<OpenSession> {
  try {
    return await passkeySession(credentialId);
  } catch (err) {
    const refused = err instanceof ApiError ? new DeviceRefused(err.code, err.message) : new DeviceRefused("unavailable", passkeyWords(err));
    (refused as unknown as { status: number }).status = err instanceof ApiError ? err.status : 0;
    throw refused;
  }
}
