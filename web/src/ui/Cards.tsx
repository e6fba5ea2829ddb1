// The message kinds as cards (docs/product/messages.md), a run with its steps, and the approval
// and question a run asks, answerable in place: the first answer wins, and a card
// answered elsewhere says who answered.
import { useEffect, useState } from "preact/hooks";
import { cardState, closedWords, decidedWords, decidesWords, expiredWords, harnessOf, msUntilExpiry, riskWord } from "../may";
import { inAskedOrder, pickedWords, writePlaceholder, type Option } from "../answers";
import { moneyWords } from "../lines";
import { plainWords, renderInline, renderMarkdown } from "../markdown";
import type { Line, Run, RunCard } from "../protocol";
import { runBy, statusWords } from "../runs";
import type { Room } from "../store";
import { Face } from "./Face";
import { useStore } from "./hooks";

type Card = Record<string, unknown>;
const str = (v: unknown): string => (typeof v === "string" ? v : v == null ? "" : String(v));
const list = (v: unknown): string[] => (Array.isArray(v) ? v.map(str) : []);
const money = moneyWords;

export function PostCard(props: { line: Line }) {
  const store = useStore();
  const { line } = props;
  const c: Card = line.card ?? {};
  // The room's read model keeps a card's headline as its text; only words of their own
  // are a caption.
  const caption = line.text && !Object.values(c).includes(line.text) ? <p class="caption">{line.text}</p> : null;
  const [open, setOpen] = useState(false);
  switch (line.kind) {
    case "status": {
      const progress = typeof c["progress"] === "number" ? (c["progress"] as number) : null;
      return (
        <div class="pill" data-kind="status">
          <strong>{str(c["phase"])}</strong> · {str(c["verb"])}
          {progress !== null && (
            <progress max={1} value={progress} aria-label="Progress">
              {Math.round(progress * 100)}%
            </progress>
          )}
          {c["estimate"] ? <span class="muted small"> · {str(c["estimate"])}</span> : null}
        </div>
      );
    }
    case "approval":
      return (
        <div class="card" data-kind="approval">
          <div class="card-kind">Approval · risk {str(c["risk"] ?? "medium")}</div>
          <p>
            <code>{str(c["action"])}</code>
          </p>
          {c["preview"] ? <pre class="preview">{str(c["preview"])}</pre> : null}
          {caption}
        </div>
      );
    case "question":
      return (
        <div class="card" data-kind="question">
          <div class="card-kind">Question</div>
          <p>{str(c["prompt"])}</p>
          <ul class="options">
            {((c["options"] as { label: string }[] | undefined) ?? []).map((o) => (
              <li key={o.label}>{o.label}</li>
            ))}
          </ul>
          {caption}
        </div>
      );
    case "receipt": {
      const steps = (c["steps"] as { title: string; status?: string; summary?: string }[] | undefined) ?? [];
      const tokens = c["tokens"] as { input: number; output: number } | null | undefined;
      const facts = [
        `${steps.length} ${steps.length === 1 ? "step" : "steps"}`,
        c["tool_calls"] != null ? `${str(c["tool_calls"])} tool calls` : null,
        tokens ? `${tokens.input + tokens.output} tokens` : null,
        money(c["cost_usd"]),
        typeof c["duration_ms"] === "number" ? `${((c["duration_ms"] as number) / 1000).toFixed(1)} s` : null,
      ].filter(Boolean);
      return (
        <div class="receipt-line" data-kind="receipt">
          <button type="button" class="link" aria-expanded={open} onClick={() => setOpen(!open)}>
            {open ? "▾" : "▸"} Receipt: {facts.join(" · ")}
          </button>
          {open && (
            <ol class="steps">
              {steps.map((s, i) => (
                <li key={i} class={`step ${s.status ?? "done"}`}>
                  {s.title}
                  {s.summary ? <span class="muted"> — {s.summary}</span> : null}
                </li>
              ))}
              {list(c["sources"]).map((s) => (
                <li key={s} class="muted small">
                  Source: {s}
                </li>
              ))}
            </ol>
          )}
          {caption}
        </div>
      );
    }
    case "artifact":
      return (
        <div class="card" data-kind="artifact">
          <div class="card-kind">
            {str(c["form"])} · v{str(c["version"] ?? 1)}
          </div>
          <p>
            <strong>{str(c["name"])}</strong>
          </p>
          {c["content"] ? (
            <details>
              <summary>Open</summary>
              <pre class="preview">{str(c["content"])}</pre>
            </details>
          ) : null}
          {caption}
        </div>
      );
    case "task":
      return (
        <div class="card" data-kind="task">
          <div class="card-kind">Task · autonomy {str(c["autonomy"] ?? "ask")}</div>
          <p>
            <strong dangerouslySetInnerHTML={{ __html: renderInline(str(c["goal"])) }} />
          </p>
          {list(c["constraints"]).length > 0 && (
            <ul>
              {list(c["constraints"]).map((x) => (
                <li key={x}>{x}</li>
              ))}
            </ul>
          )}
          {c["deadline"] ? <p class="muted small">Due {str(c["deadline"])}</p> : null}
          {caption}
        </div>
      );
    case "handoff":
      return (
        <div class="card" data-kind="handoff">
          <div class="card-kind">Hand-off to {store.nameOf(str(c["recipient"]))}</div>
          <p>{str(c["summary"])}</p>
          {list(c["open_items"]).length > 0 && (
            <ul>
              {list(c["open_items"]).map((x) => (
                <li key={x}>{x}</li>
              ))}
            </ul>
          )}
          {caption}
        </div>
      );
    case "checkpoint":
      return (
        <div class="card compact" data-kind="checkpoint">
          <span class="card-kind">Checkpoint</span> {str(c["milestone"])}
          {c["next"] ? <span class="muted"> · next: {str(c["next"])}</span> : null}
          {caption}
        </div>
      );
    case "summary":
      return (
        <div class="card" data-kind="summary">
          <div class="card-kind">Summary{money(c["cost_usd"]) ? ` · ${money(c["cost_usd"])}` : ""}</div>
          <div class="md" dangerouslySetInnerHTML={{ __html: renderMarkdown(str(c["outcome"])) }} />
          {list(c["changed"]).length > 0 && (
            <>
              <h3 class="small">What changed</h3>
              <ul>
                {list(c["changed"]).map((x) => (
                  <li key={x}>{x}</li>
                ))}
              </ul>
            </>
          )}
          {list(c["follow_ups"]).length > 0 && (
            <>
              <h3 class="small">Follow-ups</h3>
              <ul>
                {list(c["follow_ups"]).map((x) => (
                  <li key={x}>{x}</li>
                ))}
              </ul>
            </>
          )}
          {caption}
        </div>
      );
    default:
      return <div class="bubble">{line.text}</div>;
  }
}

const STATE_WORDS: Record<string, string> = {
  running: "working",
  paused: "paused",
  completed: "done",
  failed: "failed",
  cancelled: "stopped",
};

export function RunBlock(props: { run: Run; room?: Room; found?: boolean }) {
  const store = useStore();
  const { run, room } = props;
  const asks = room ? [...room.cards.values()].filter((c) => c.run_id === run.run_id).sort((a, b) => a.asked_seq - b.asked_seq) : [];
  const live = run.state === "running" || run.state === "paused";
  const [open, setOpen] = useState(live);
  const steps = run.steps ?? [];
  const by = store.nameOf(runBy(run));
  const status = live ? statusWords(run.status) : null;
  return (
    <section
      id={`line-${run.run_id}`}
      data-seq={run.started_seq}
      class={`run ${run.state}${props.found ? " found" : ""}`}
      data-testid="run"
      aria-current={props.found ? "true" : undefined}
      aria-label={`Run by ${by}: ${plainWords(run.goal)}`}
    >
      <div class="run-head">
        <Face id={runBy(run)} only class="solo" />
        <span class="author harness">{by}</span>
        <span class={`state ${run.state}`}>{STATE_WORDS[run.state] ?? run.state}</span>
        <span class="goal" dangerouslySetInnerHTML={{ __html: renderInline(run.goal) }} />
      </div>
      {status && (
        <div class="pill" role="status" data-testid="run-status">
          {status.phase ? <strong>{status.phase}{status.words ? " · " : ""}</strong> : null}
          {status.words}
          {status.progress !== null && <progress max={1} value={status.progress} aria-label="Progress" />}
        </div>
      )}
      {steps.length > 0 && (
        <>
          <button type="button" class="link small" aria-expanded={open} onClick={() => setOpen(!open)}>
            {open ? "▾" : "▸"} {steps.length} {steps.length === 1 ? "step" : "steps"}
          </button>
          {open && (
            <ol class="steps">
              {steps.map((s) => (
                <li key={s.step_id} class={`step ${s.status}`} data-testid="step">
                  <span aria-hidden="true">{s.status === "done" ? "✓" : s.status === "failed" ? "✗" : "…"}</span> {s.title ?? s.step_id}
                  {s.summary ? <span class="muted"> — {s.summary}</span> : null}
                  <span class="sr-only"> ({s.status})</span>
                </li>
              ))}
            </ol>
          )}
        </>
      )}
      {room && asks.map((card) => <AskCard key={card.id} card={card} room={room} />)}
      {run.state === "completed" && run.summary && run.summary !== "NO_REPLY" && <p class="small">{run.summary}</p>}
      {run.state === "failed" && run.why && <p class="error small">{run.why}</p>}
      {run.usage && run.usage.tokens_in + run.usage.tokens_out > 0 && (
        <p class="muted small">
          {run.usage.tokens_in + run.usage.tokens_out} tokens{run.usage.cost_usd ? ` · ${moneyWords(run.usage.cost_usd)}` : ""}
        </p>
      )}
    </section>
  );
}


export function AskCard(props: { card: RunCard; room: Room }) {
  const store = useStore();
  const { card, room } = props;
  const c = card.card;
  const [editing, setEditing] = useState(false);
  const [edited, setEdited] = useState(str(c["action"]));
  const [typed, setTyped] = useState("");
  const [chosen, setChosen] = useState<string[]>([]);
  const [busy, setBusy] = useState(false);
  const run = room.runs.get(card.run_id);
  const harness = card.harness_id ?? run?.harness_id ?? "";
  // Named as the run's head names it: the agent whose turn it is, else the harness.
  const asker = run ? runBy(run) : harness;
  // Ask the sheet again at the card's expiry: nothing else tells the room then (a timeout
  // is capped at about 24 days, so a later one is armed again when this one fires).
  const [now, setNow] = useState(() => Date.now());
  const wait = msUntilExpiry(card, now);
  useEffect(() => {
    if (wait === null) return;
    const timer = setTimeout(() => (setNow(Date.now()), void store.reloadSheet(room.id)), Math.min(wait + 50, 2 ** 31 - 1));
    return () => clearTimeout(timer);
  }, [wait]);
  // What the door would take from me, as the sheet's `may` says (ADR 0142): buttons only
  // for who may answer.
  const at = cardState(card, room.sheet?.may ?? null);
  const answered = at.state === "answered";
  // Open but not mine, past answering, or not read yet: a muted line in place of the buttons.
  const note =
    at.state === "expired" || at.state === "ended" ? (
      <p class="muted" data-testid="closed">
        {closedWords(card, at.state)}
      </p>
    ) : at.state === "theirs" ? (
      <p class="muted" data-testid="decides">
        {decidesWords(card, at.deciders, store.participants.get(harness)?.name ?? null, store.nameOf)}
      </p>
    ) : at.state === "waiting" ? (
      // Just asked: no buttons until the sheet says whose it is.
      <p class="muted" data-testid="reading" aria-busy="true" />
    ) : null;
  const answer = (card.answer ?? {}) as Record<string, unknown>;
  const by = card.answered_by ? (card.answered_by === store.me?.id ? "you" : store.nameOf(card.answered_by)) : "";

  const send = async (event: Record<string, unknown>) => {
    setBusy(true);
    try {
      await store.send({ space_id: room.id, run_id: card.run_id, ...event });
    } catch (err) {
      store.toast((err as Error).message);
    } finally {
      setBusy(false);
    }
  };

  if (card.kind === "approval") {
    const risk = riskWord(card);
    return (
      <section id={`line-${card.id}`} data-seq={card.asked_seq} class={`card ask ${answered ? "answered" : ""}`} data-kind="approval" data-testid="approval" aria-label={`Approval asked by ${store.nameOf(asker)}`}>
        <div class="card-kind">
          {store.nameOf(asker)} asks to approve
          {risk !== null && (
            <>
              {" "}
              · <span class={`risk ${risk}`}>risk {risk}</span>
            </>
          )}
        </div>
        <p>
          <code>{str(c["action"])}</code>
        </p>
        {c["preview"] ? <pre class="preview">{str(c["preview"])}</pre> : null}
        {answered ? (
          <p class="decided" role="status" data-testid="decided">
            {decidedWords(answer, by, card.answered_by, store.participants.get(harnessOf(card, run))?.owner_id === store.me?.id)}
          </p>
        ) : note ? (
          note
        ) : editing ? (
          <form
            class="row"
            onSubmit={(e) => {
              e.preventDefault();
              void send({ type: "approval.resolved", approval_id: card.id, decision: "edit", edited });
            }}
          >
            <label class="sr-only" for={`edit-${card.id}`}>
              The action as edited
            </label>
            <input id={`edit-${card.id}`} value={edited} onInput={(e) => setEdited(e.currentTarget.value)} />
            <button type="submit" class="primary" disabled={busy}>
              Approve edited
            </button>
            <button type="button" onClick={() => setEditing(false)}>
              Cancel
            </button>
          </form>
        ) : (
          <div class="row">
            <button type="button" class="primary" disabled={busy} onClick={() => send({ type: "approval.resolved", approval_id: card.id, decision: "approve" })}>
              Approve
            </button>
            <button type="button" disabled={busy} onClick={() => setEditing(true)}>
              Edit
            </button>
            <button type="button" class="danger" disabled={busy} onClick={() => send({ type: "approval.resolved", approval_id: card.id, decision: "deny" })}>
              Deny
            </button>
          </div>
        )}
      </section>
    );
  }
  const options = (c["options"] as Option[] | undefined) ?? [];
  const picked = pickedWords(options, answer);
  const several = c["multiple"] === true;
  return (
    <section id={`line-${card.id}`} data-seq={card.asked_seq} class={`card ask ${answered ? "answered" : ""}`} data-kind="question" data-testid="question" aria-label={`Question from ${store.nameOf(asker)}`}>
      <div class="card-kind">{store.nameOf(asker)} asks</div>
      <p>{str(c["prompt"])}</p>
      {answered ? (
        <p class="decided" role="status" data-testid="decided">
          {expiredWords(answer) ?? `Answered “${picked}” by ${by}`}
        </p>
      ) : note ? (
        note
      ) : (
        <>
          {several ? (
            <fieldset class="choices">
              <legend class="small muted">Choose one or more</legend>
              <div class="row wrap">
                {options.map((o) => (
                  <label key={o.value} class="check">
                    <input
                      type="checkbox"
                      checked={chosen.includes(o.value)}
                      onChange={(e) => setChosen(e.currentTarget.checked ? [...chosen, o.value] : chosen.filter((v) => v !== o.value))}
                    />
                    {o.label}
                  </label>
                ))}
              </div>
              <div class="row">
                <button
                  type="button"
                  class="primary"
                  disabled={busy || chosen.length === 0}
                  onClick={() => send({ type: "question.answered", question_id: card.id, values: inAskedOrder(options, chosen) })}
                >
                  {chosen.length > 1 ? `Answer with these ${chosen.length}` : "Answer"}
                </button>
              </div>
            </fieldset>
          ) : (
            <div class="row wrap">
              {options.map((o) => (
                <button key={o.value} type="button" disabled={busy} class={o.value === c["default"] ? "primary" : ""} onClick={() => send({ type: "question.answered", question_id: card.id, value: o.value })}>
                  {o.label}
                </button>
              ))}
            </div>
          )}
          {/* Every card takes written words too, whatever the options (the door takes them). */}
          <form
            class="row"
            data-testid="write-answer"
            onSubmit={(e) => {
              e.preventDefault();
              if (typed.trim()) void send({ type: "question.answered", question_id: card.id, text: typed.trim() });
            }}
          >
            <label class="sr-only" for={`answer-${card.id}`}>
              Your answer
            </label>
            <input id={`answer-${card.id}`} placeholder={writePlaceholder(options)} value={typed} onInput={(e) => setTyped(e.currentTarget.value)} />
            <button type="submit" disabled={busy || !typed.trim()}>
              Send
            </button>
          </form>
        </>
      )}
    </section>
  );
}
