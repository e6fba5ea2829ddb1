// #/agents: the workspace's harnesses, and Connect a harness; #/harness/<id>: one harness's
// page — its face, what it spent, and for its owner the autonomy dial and the rules
// (docs/adr/0130; GET and PUT /v1/harnesses/:id/policy).
import { useEffect, useState } from "preact/hooks";
import { dollars, statusWords } from "../agents";
import { bars, chartWords, dayWords, tokens, type Day } from "../chart";
import { moneyWords } from "../lines";
import { dialWords, EFFECTS, LEVELS, policyBody, rows, ruleWords, type Effect, type Level, type Policy, type RuleRow } from "../policy";
import { ConnectDialog } from "./Connect";
import { useStore } from "./hooks";
import { PageBack, refusal } from "./RoomSettings";
import "./pages.css";

export function AgentsPage() {
  const store = useStore();
  const [connecting, setConnecting] = useState(false);
  const harnesses = [...store.participants.values()].filter((p) => p.kind === "harness").sort((a, b) => a.name.localeCompare(b.name));
  const mayConnect = store.me !== null && store.me.role !== "guest";
  return (
    <section class="page" aria-labelledby="agents-title" data-testid="agents-page">
      <PageBack />
      <h1 id="agents-title">Agents</h1>
      {mayConnect && (
        <button type="button" class="primary" onClick={() => setConnecting(true)}>
          Connect a harness
        </button>
      )}
      <h2>Harnesses</h2>
      {harnesses.length === 0 ? (
        <p class="muted">No harness is connected yet.</p>
      ) : (
        <ul class="harnesses" data-testid="harnesses">
          {harnesses.map((h) => {
            const face = statusWords(h.status);
            return (
              <li key={h.participant_id} data-harness={h.participant_id}>
                <a href={`#/harness/${encodeURIComponent(h.participant_id)}`}>{h.name}</a>
                <span class="muted small">{h.owner_id === store.me?.id ? "yours" : `${store.nameOf(h.owner_id ?? "")}'s`}</span>
                {face && <span class={`face-status ${h.status ?? ""}`}>{face}</span>}
              </li>
            );
          })}
        </ul>
      )}
      {connecting && <ConnectDialog onClose={() => setConnecting(false)} />}
    </section>
  );
}

interface Usage {
  tokens_in: number;
  tokens_out: number;
  cost_usd: number;
  reports: number;
  uncosted: number;
}

export function HarnessPage(props: { harnessId: string }) {
  const store = useStore();
  const h = store.participants.get(props.harnessId);
  const mine = h?.owner_id === store.me?.id;
  const [usage, setUsage] = useState<Usage | null>(null);
  const [days, setDays] = useState<Day[] | null>(null);
  useEffect(() => {
    if (!mine) return;
    store.api
      ?.call<{ usage: Usage; days?: Day[] }>("GET", `/v1/harnesses/${encodeURIComponent(props.harnessId)}/usage`)
      .then(
        (r) => {
          setUsage(r.usage);
          setDays(r.days ?? null);
        },
        () => setUsage(null),
      );
  }, [store.api, props.harnessId, mine]);
  if (!h || h.kind !== "harness") {
    return (
      <section class="page" aria-labelledby="harness-title">
        <PageBack />
        <h1 id="harness-title">No such harness</h1>
        <p>
          No harness of this workspace has that id. <a href="#/agents">See the agents</a>.
        </p>
      </section>
    );
  }
  const face = statusWords(h.status);
  return (
    <section class="page" aria-labelledby="harness-title" data-testid="harness-page">
      <PageBack />
      <h1 id="harness-title">
        {h.name} {face && <span class={`face-status ${h.status ?? ""}`}>{face}</span>}
      </h1>
      <p class="muted">
        A harness, {mine ? "yours" : `${store.nameOf(h.owner_id ?? "")}'s`}
        {h.capabilities?.length ? ` · it declared ${h.capabilities.join(", ")}` : ""}.
      </p>
      {usage && (
        <p data-testid="harness-usage">
          {usage.reports === 0
            ? "It has reported no spend yet."
            : `Spent ${dollars(usage.cost_usd)} over ${usage.reports} ${usage.reports === 1 ? "report" : "reports"} · ${usage.tokens_in.toLocaleString()} tokens in, ${usage.tokens_out.toLocaleString()} out${usage.uncosted ? ` · ${usage.uncosted} with no cost said` : ""}.`}
        </p>
      )}
      {days && days.length > 0 && (
        <section class="usage-charts" aria-labelledby="over-time" data-testid="usage-charts">
          <h2 id="over-time">Over the last {days.length} days</h2>
          <DayChart id="chart-spend" title="Spend a day" days={days} what="spend" />
          <DayChart id="chart-tokens" title="Tokens a day" days={days} what="tokens" />
        </section>
      )}
      {mine ? (
        <PolicyForm harnessId={h.participant_id} name={h.name} />
      ) : (
        <p class="muted" data-testid="policy-not-yours">
          Its autonomy dial and its rules are {store.nameOf(h.owner_id ?? "")}'s to set, as its owner.
        </p>
      )}
    </section>
  );
}

const CHART_W = 300;
const CHART_H = 64;

/** One small bar chart, a bar a day, drawn by the app (no chart library): its words say
 * the total and the busiest day; each bar's title says its day and figure. */
function DayChart(props: { id: string; title: string; days: Day[]; what: "spend" | "tokens" }) {
  const value = props.what === "spend" ? (d: Day) => d.cost_usd : tokens;
  const drawn = bars(props.days, value, CHART_W, CHART_H);
  const words = chartWords(props.days, props.what);
  const figure = (v: number) => (props.what === "spend" ? (moneyWords(v) ?? "$0.00") : `${v.toLocaleString("en")} tokens`);
  return (
    <figure class="day-chart" data-testid={props.id}>
      <figcaption id={`${props.id}-title`}>
        <strong>{props.title}</strong> <span class="muted small" data-testid="chart-words">{words}</span>
      </figcaption>
      <svg viewBox={`0 0 ${CHART_W} ${CHART_H + 14}`} role="img" aria-labelledby={`${props.id}-title`}>
        <line x1="0" x2={CHART_W} y1={CHART_H + 0.5} y2={CHART_H + 0.5} class="axis" />
        {drawn.map((b) => (
          <rect key={b.day} x={b.x} y={b.y} width={b.width} height={b.height} class="bar" data-day={b.day}>
            <title>{`${dayWords(b.day)}: ${figure(b.value)}`}</title>
          </rect>
        ))}
        <text x="0" y={CHART_H + 12} class="tick">
          {dayWords(props.days[0]!.day)}
        </text>
        <text x={CHART_W} y={CHART_H + 12} class="tick" text-anchor="end">
          {dayWords(props.days[props.days.length - 1]!.day)}
        </text>
      </svg>
    </figure>
  );
}

function PolicyForm(props: { harnessId: string; name: string }) {
  const store = useStore();
  const [policy, setPolicy] = useState<Policy | null>(null);
  const [level, setLevel] = useState<Level>("L1");
  const [typed, setTyped] = useState<RuleRow[]>([]);
  const [error, setError] = useState<{ row: number | null; text: string } | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const path = `/v1/harnesses/${encodeURIComponent(props.harnessId)}/policy`;
  const show = (p: Policy) => {
    setPolicy(p);
    setLevel(p.autonomy);
    setTyped(rows(p.rules));
  };
  useEffect(() => {
    store.api?.call<Policy>("GET", path).then(show, (err) => setError({ row: null, text: refusal(err) }));
  }, [store.api, path]);
  const edit = (i: number, change: Partial<RuleRow>) => {
    setTyped(typed.map((r, j) => (j === i ? { ...r, ...change } : r)));
    setSaved(null);
  };
  if (!policy) return error ? <p class="error" role="alert">{error.text}</p> : null;
  return (
    <form
      class="settings-form"
      aria-labelledby="policy-title"
      data-testid="policy-form"
      onSubmit={async (e) => {
        e.preventDefault();
        const checked = policyBody(level, typed);
        if (!checked.ok) {
          setError({ row: checked.row, text: checked.error });
          return;
        }
        setBusy(true);
        setError(null);
        try {
          const now = await store.api!.call<Policy>("PUT", path, checked.body);
          show(now);
          const n = now.rules.length;
          setSaved(`Saved: ${props.name} is at ${now.autonomy === "off" ? "no dial" : now.autonomy}, with ${n === 0 ? "no rules" : n === 1 ? "one rule" : `${n} rules`}.`);
        } catch (err) {
          setError({ row: null, text: `Not saved: ${refusal(err)}` });
        } finally {
          setBusy(false);
        }
      }}
    >
      <h2 id="policy-title">Autonomy dial</h2>
      <fieldset class="dial" disabled={busy}>
        <legend class="sr-only">Autonomy dial of {props.name}</legend>
        {LEVELS.map((l) => (
          <label key={l.level} class="check">
            <input type="radio" name="autonomy" value={l.level} checked={level === l.level} onChange={() => (setLevel(l.level), setSaved(null))} />
            <span>
              <strong>{l.name}</strong>
              <span class="muted small">{l.words}</span>
            </span>
          </label>
        ))}
      </fieldset>
      <p data-testid="dial-words">{dialWords(level, policy.rules)}</p>
      <h2>Your rules</h2>
      <p class="muted">
        Per action name, and if you like per arguments: <code>*</code> stands for anything, every other character for itself (<code>jacobian.mail.*</code>, <code>ls *</code>). A deny
        wins over an always ask, and an always ask over an allow.
      </p>
      {typed.length === 0 && <p class="muted">No rules: every approval is asked{level === "L3" ? ", but at L3 everything is allowed" : ""}.</p>}
      <ul class="rules" data-testid="rules">
        {typed.map((r, i) => (
          <li key={i} data-testid="rule" class={error?.row === i + 1 ? "rule-error" : ""} aria-label={`Rule ${i + 1}${r.action ? `: ${ruleWords({ ...r, args: r.args || null })}` : ""}`}>
            <div>
              <label for={`rule-effect-${i}`}>Rule {i + 1}</label>
              <select id={`rule-effect-${i}`} value={r.effect} onChange={(e) => edit(i, { effect: e.currentTarget.value as Effect })}>
                {EFFECTS.map((x) => (
                  <option key={x.effect} value={x.effect}>
                    {x.name}
                  </option>
                ))}
              </select>
            </div>
            <div>
              <label for={`rule-action-${i}`}>Action</label>
              <input id={`rule-action-${i}`} autocomplete="off" placeholder="jacobian.shell.execute" value={r.action} onInput={(e) => edit(i, { action: e.currentTarget.value })} />
            </div>
            <div>
              <label for={`rule-args-${i}`}>Arguments</label>
              <input id={`rule-args-${i}`} autocomplete="off" placeholder="any" value={r.args} onInput={(e) => edit(i, { args: e.currentTarget.value })} />
            </div>
            <button type="button" aria-label={`Take out rule ${i + 1}`} onClick={() => (setTyped(typed.filter((_, j) => j !== i)), setSaved(null))}>
              Take out
            </button>
          </li>
        ))}
      </ul>
      <div class="row">
        <button type="button" onClick={() => (setTyped([...typed, { action: "", args: "", effect: "allow" }]), setSaved(null))}>
          Add a rule
        </button>
        <button type="submit" class="primary" disabled={busy}>
          {busy ? "Saving…" : "Save the dial and rules"}
        </button>
      </div>
      {error && (
        <p class="error" role="alert" data-testid="policy-error">
          {error.text}
        </p>
      )}
      {saved && (
        <p role="status" class="saved" data-testid="policy-saved">
          {saved}
        </p>
      )}
    </form>
  );
}
