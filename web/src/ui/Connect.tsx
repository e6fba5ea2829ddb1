// Agents → Connect a harness: what `chips connect custom` does, in the app
// (docs/product/jacobian-channel.md, Connect it). The four lines — the token among them — are
// shown once, with where to put them and how to start the harness with them.
import { useState } from "preact/hooks";
import { cliCommand, connectLines, envFile, startCommand, type Connected } from "../connect";
import type { Level } from "../policy";
import { Modal } from "./Modal";
import { refusal } from "./RoomSettings";
import { useStore } from "./hooks";

const STARTS: Level[] = ["L0", "L1", "L2", "L3"];

export function ConnectDialog(props: { onClose: () => void }) {
  const store = useStore();
  const [name, setName] = useState("");
  const [dial, setDial] = useState(true);
  const [level, setLevel] = useState<Level>("L1");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [made, setMade] = useState<Connected | null>(null);
  const [copied, setCopied] = useState(false);
  if (made) {
    const lines = connectLines(made, location.origin);
    return (
      <Modal title={`${made.name} is connected`} onClose={props.onClose} wide>
        <div data-testid="connected">
          <p>
            These are the four lines every harness is given. <strong>They are shown once:</strong> the token can't be shown again. Lose it, and disconnect {made.name} and connect it again.
          </p>
          {made.name !== name.trim() && (
            <p class="muted" data-testid="renamed">
              {name.trim()} is taken in this workspace: this harness is {made.name}.
            </p>
          )}
          <label for="connect-lines">Save them as {envFile(made.name)} where it runs</label>
          <textarea id="connect-lines" class="lines-once" data-testid="connect-lines" readOnly rows={4} value={lines} onFocus={(e) => e.currentTarget.select()} />
          <div class="row">
            <button
              type="button"
              onClick={async () => {
                try {
                  await navigator.clipboard.writeText(lines);
                  setCopied(true);
                } catch {
                  setError("This browser did not let the page copy: select the lines and copy them yourself.");
                }
              }}
            >
              {copied ? "Copied" : "Copy the lines"}
            </button>
          </div>
          <p>Then start it with them as its environment:</p>
          <pre class="lines-once" data-testid="connect-command" tabIndex={0} aria-label="The command">{startCommand(made.name)}</pre>
          <p class="muted small">
            Or put them in its own configuration (Jacobian: the <code>channels.chips</code> block). <code>chips doctor</code> says whether the token has been used yet. From the command line
            this was <code>{cliCommand(made.name, made.autonomy !== "off", made.autonomy)}</code>.
          </p>
          {error && (
            <p class="error" role="alert">
              {error}
            </p>
          )}
          <div class="row end">
            <a href={`#/room/${encodeURIComponent(made.space_id)}`} onClick={props.onClose}>
              Open its room
            </a>
            <a href={`#/harness/${encodeURIComponent(made.harness_id)}`} onClick={props.onClose}>
              Its page
            </a>
            <button type="button" class="primary" onClick={props.onClose}>
              Done
            </button>
          </div>
        </div>
      </Modal>
    );
  }
  return (
    <Modal title="Connect a harness" onClose={props.onClose}>
      <form
        data-testid="connect-form"
        onSubmit={async (e) => {
          e.preventDefault();
          setBusy(true);
          setError(null);
          try {
            const autonomy = dial ? level : "off";
            const answer = await store.api!.call<Connected>("POST", "/v1/harnesses", { name: name.trim(), autonomy });
            // Kept from the form: the answer says it too, but an older gateway may not.
            setMade({ ...answer, autonomy: answer.autonomy ?? autonomy });
            void store.reloadDirectory();
          } catch (err) {
            setError(refusal(err));
          } finally {
            setBusy(false);
          }
        }}
      >
        <fieldset class="dial">
          <legend>What is it?</legend>
          <ul class="kinds">
            <li>
              <label class="check">
                <input type="radio" name="connect-kind" value="http" checked />
                <span>
                  <strong>Anything with HTTP</strong>
                  <span class="muted small">A program of yours, or one that speaks Chips's wire: it is given four lines to put where it runs.</span>
                </span>
              </label>
            </li>
          </ul>
        </fieldset>
        <label for="connect-name">Its name</label>
        <input id="connect-name" required maxLength={80} autocomplete="off" placeholder="Scout" value={name} onInput={(e) => setName(e.currentTarget.value)} />
        <details class="advanced">
          <summary>Advanced</summary>
          <label class="check">
            <input type="checkbox" checked={dial} onChange={(e) => setDial(e.currentTarget.checked)} />
            Takes the autonomy dial
          </label>
          <p class="muted small">
            Untick it for a harness whose own permission model decides what it may do (Jacobian): Chips then decides none of its approvals.
          </p>
          {dial && (
            <>
              <label for="connect-level">It starts at</label>
              <select id="connect-level" value={level} onChange={(e) => setLevel(e.currentTarget.value as Level)}>
                {STARTS.map((l) => (
                  <option key={l} value={l}>
                    {l}
                    {l === "L1" ? " (the default)" : ""}
                  </option>
                ))}
              </select>
            </>
          )}
        </details>
        {error && (
          <p class="error" role="alert" data-testid="connect-error">
            {error}
          </p>
        )}
        <div class="row end">
          <button type="button" onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" class="primary" disabled={busy || !name.trim()}>
            {busy ? "Connecting…" : "Connect"}
          </button>
        </div>
      </form>
    </Modal>
  );
}
