import { describe, expect, it } from "vitest";
import {
  ASK_WAIT_MS,
  answeredAsk,
  askOf,
  askState,
  askWords,
  faceLabel,
  foldPause,
  foldWork,
  foldWords,
  heldNotes,
  isAgentTalk,
  kindWords,
  mayAsk,
  parseCeiling,
  pauseWords,
  refereeWords,
  spendWords,
  dollars,
  statusWords,
  talkFolds,
  workingNow,
  workingRuns,
  whereWords,
  workingWords,
  goingRuns,
} from "./agents";
import { lineOf } from "./lines";
import type { AnyEvent, Line } from "./protocol";

const names: Record<string, string> = { usr_a: "Arjun Rao", usr_m: "Maya Chen", hrn_s: "Scout", agt_j1: "J1", agt_j2: "J2", agt_n: "Nova", sys: "Chips" };
const nameOf = (id: string) => names[id] ?? "Someone";
let seq = 10;
function ev(type: string, actor: string, fields: Record<string, unknown> = {}, ts = "2026-12-01T10:00:00.000Z"): AnyEvent {
  seq += 1;
  const kind = actor.startsWith("usr") ? "person" : actor.startsWith("agt") ? "agent" : actor.startsWith("hrn") ? "harness" : "system";
  return { v: 1, id: `evt_01J${seq}`, seq, ts, workspace_id: "ws_1", actor: { kind, id: actor }, type, space_id: "spc_1", ...fields } as AnyEvent;
}

describe("faces", () => {
  it("say an agent's harness, unless the agent is named as its harness is", () => {
    expect(kindWords({ kind: "agent", name: "ASCII Art", harness: "Jacobian" })).toBe("Jacobian agent");
    expect(kindWords({ kind: "agent", name: "OpenClaw", harness: "OpenClaw" })).toBe("agent");
    expect(kindWords({ kind: "harness", name: "Scout" })).toBe("harness");
    expect(kindWords({ kind: "person", name: "Arjun" })).toBe("person");
    expect(faceLabel({ kind: "agent", name: "OpenClaw 2", harness: "Scout" })).toBe("OpenClaw 2 (Scout agent)");
    expect(faceLabel({ kind: "person", name: "Arjun" })).toBe("Arjun");
  });

  it("read Restarting while a harness restarts, and nothing when all is well", () => {
    expect(statusWords("restarting")).toBe("Restarting…");
    expect(statusWords("trouble")).toBe("In trouble");
    expect(statusWords("connected")).toBeNull();
    expect(statusWords(undefined)).toBeNull();
  });

  it("say where an agent is, and how many of a free agent's words wait", () => {
    const title = (id: string) => (id === "spc_a" ? "Alpha" : null);
    expect(whereWords({ space_id: "spc_a" }, title)).toBe("in Alpha");
    expect(whereWords({ space_id: "spc_x" }, title)).toBe("in another room");
    expect(whereWords({ space_id: null, held: 0 }, title)).toBe("free");
    expect(whereWords({ space_id: null, held: 1 }, title)).toBe("free, 1 message waits");
    expect(whereWords({ space_id: null, held: 3 }, title)).toBe("free, 3 messages wait");
  });

  it("let the harness's owner, or a workspace owner or admin, ask", () => {
    expect(mayAsk({ id: "usr_m", role: "member" }, { owner_id: "usr_m" })).toBe(true);
    expect(mayAsk({ id: "usr_m", role: "member" }, { owner_id: "usr_a" })).toBe(false);
    expect(mayAsk({ id: "usr_m", role: "admin" }, { owner_id: "usr_a" })).toBe(true);
    expect(mayAsk(null, { owner_id: "usr_a" })).toBe(false);
  });
});

describe("the pause", () => {
  it("follows the door: a person's pause lasts until carry on; Chips's ends at a person's act", () => {
    const byArjun = foldPause(null, ev("exchange.set", "usr_a", { state: "paused", why: "person" }));
    expect(byArjun).toMatchObject({ why: "person", by: "usr_a" });
    // A person's words don't end a person's pause, and Chips's pause doesn't outrank it.
    expect(foldPause(byArjun, ev("message.post", "usr_m", { text: "hi" }))).toBe(byArjun);
    expect(foldPause(byArjun, ev("exchange.set", "sys", { state: "paused", why: "spend" }))).toBe(byArjun);
    expect(foldPause(byArjun, ev("exchange.set", "usr_m", { state: "running" }))).toBeNull();

    const spend = { ceiling_usd: 3, spent_usd: 3.1, since_seq: 4, uncounted_runs: 0 };
    const atCeiling = foldPause(null, ev("exchange.set", "sys", { state: "paused", why: "spend", spend }));
    expect(atCeiling).toMatchObject({ why: "spend", spend });
    expect(foldPause(atCeiling, ev("message.post", "agt_j1", { text: "more" }))).toBe(atCeiling);
    expect(foldPause(atCeiling, ev("message.post", "usr_a", { text: "go on" }))).toBeNull();
  });

  it("says who paused them, or that Chips did at the ceiling", () => {
    expect(pauseWords({ why: "person", by: "usr_a", seq: 1 }, nameOf)).toMatch(/^Arjun Rao paused the agents here/);
    const words = pauseWords({ why: "spend", by: "sys", seq: 1, spend: { ceiling_usd: 3, spent_usd: 3.1, since_seq: 1, uncounted_runs: 0 } }, nameOf);
    expect(words).toContain("spend ceiling");
    expect(words).toContain("$3.10 of the $3.00");
  });
});

describe("the ceiling", () => {
  it("takes dollars from $0.25 to $100, and says what is wrong otherwise", () => {
    expect(parseCeiling("5")).toEqual({ usd: 5 });
    expect(parseCeiling(" $0.25 ")).toEqual({ usd: 0.25 });
    expect(parseCeiling("100")).toEqual({ usd: 100 });
    expect(parseCeiling("12.345")).toEqual({ usd: 12.35 });
    expect(parseCeiling("0.1")).toEqual({ error: "A room's spend ceiling is from $0.25 to $100; $0.10 is out of range." });
    expect(parseCeiling("101")).toMatchObject({ error: expect.stringContaining("out of range") });
    expect(parseCeiling("five")).toEqual({ error: "“five” is not an amount of dollars." });
    expect(parseCeiling("")).toMatchObject({ error: expect.stringContaining("$0.25 to $100") });
  });

  it("says the job's spend in words", () => {
    expect(spendWords({ ceiling_usd: 3, spent_usd: 0.42, since_seq: 1, uncounted_runs: 0 })).toBe("This job has spent $0.42 of the $3.00 this room allows a job (14%).");
    expect(spendWords({ ceiling_usd: 3, spent_usd: 1, since_seq: 1, uncounted_runs: 2 })).toContain("2 runs reported no cost and count nothing.");
    // A cheap job reads its own figures, never "$0.00" (issue #30).
    expect(spendWords({ ceiling_usd: 3, spent_usd: 0.002, since_seq: 1, uncounted_runs: 0 })).toMatch(/^This job has spent \$0\.002 of the \$3\.00/);
    expect(dollars(0.002)).toBe("$0.002");
    expect(dollars(0)).toBe("$0.00");
  });
});

describe("asks of a harness for an agent", () => {
  it("wait a minute, then say the harness didn't make it", () => {
    const asked = askOf(ev("agent.fork", "usr_a", { agent_id: "agt_j1", harness_id: "hrn_s" }))!;
    expect(asked).toMatchObject({ kind: "fork", by: "usr_a", harness_id: "hrn_s", agent_id: "agt_j1" });
    const start = Date.parse(asked.ts);
    expect(askState(asked, start + 1000)).toBe("waiting");
    expect(askWords(asked, start + 1000, nameOf)).toBe("Arjun Rao asked Scout for a copy of J1 here. Waiting for Scout (59 s)…");
    expect(askState(asked, start + ASK_WAIT_MS)).toBe("missed");
    expect(askWords(asked, start + ASK_WAIT_MS, nameOf)).toBe(
      "Arjun Rao asked Scout for a copy of J1 here. Scout didn't make the copy: the room stopped waiting after a minute.",
    );
  });

  it("say who joined once the harness answered in time", () => {
    const asked = askOf(ev("agent.asked", "usr_a", { harness_id: "hrn_s", name: "Nova" }))!;
    expect(asked.kind).toBe("new");
    const attached = ev("agent.attached", "usr_a", { agent_id: "agt_n", harness_id: "hrn_s", made_for: asked.id });
    expect(answeredAsk(attached)).toEqual({ ask: asked.id, agent: "agt_n" });
    expect(answeredAsk(ev("agent.attached", "usr_a", { agent_id: "agt_j2", harness_id: "hrn_s" }))).toBeNull();
    const made = { ...asked, answered_by: "agt_n" };
    expect(askState(made, Date.parse(asked.ts) + 10 * ASK_WAIT_MS)).toBe("made");
    expect(askWords(made, 0, nameOf)).toBe("Arjun Rao asked Scout for a new agent called Nova here: Nova joined.");
  });

  it("are only agent.fork and agent.asked", () => {
    expect(askOf(ev("message.post", "usr_a", { text: "hi" }))).toBeNull();
  });
});

describe("the referee's quiet lines", () => {
  it("say who paused or let the agents carry on, a warning, a ceiling, a move", () => {
    expect(refereeWords(ev("exchange.set", "usr_a", { state: "paused", why: "person" }), nameOf)).toBe("Arjun Rao paused the agents");
    expect(refereeWords(ev("exchange.set", "usr_m", { state: "running" }), nameOf)).toBe("Maya Chen let the agents carry on");
    expect(refereeWords(ev("exchange.set", "sys", { state: "paused", why: "spend", spend: { ceiling_usd: 3, spent_usd: 3.1, since_seq: 1, uncounted_runs: 0 } }), nameOf)).toBe(
      "Chips paused the agents: this job reached the $3.00 this room allows a job",
    );
    const warn = { budget: { limit_usd: 3, spent_usd: 2.5 }, threshold: 80, scope: "job" };
    expect(refereeWords(ev("budget.warning", "sys", { ...warn, action: "warn" }), nameOf)).toBe("This job has spent $2.50 of the $3.00 this room allows a job");
    expect(refereeWords(ev("budget.warning", "sys", { ...warn, threshold: 100, action: "pause" }), nameOf)).toBeNull();
    expect(refereeWords(ev("space.spend_ceiling_set", "usr_a", { usd: 5 }), nameOf)).toBe("Arjun Rao set this room's spend ceiling to $5.00 a job");
    expect(refereeWords(ev("space.spend_ceiling_set", "usr_a", {}), nameOf)).toBe("Arjun Rao set this room's spend ceiling back to the default, $3.00 a job");
    expect(refereeWords(ev("agent.released", "usr_a", { agent_id: "agt_j1", reason: "moved", moved_to: "spc_2" }), nameOf)).toBe("J1 moved to another room");
    expect(refereeWords(ev("agent.released", "usr_a", { agent_id: "agt_j1", reason: "removed" }), nameOf)).toBeNull();
  });
});

describe("held words", () => {
  const line = (actor: string, fields: Record<string, unknown>) => lineOf(ev("message.post", actor, { text: "x", ...fields }), nameOf, "usr_a") as Line;
  const isPerson = (id: string) => id.startsWith("usr_");

  it("are read from the post, and the last of a stretch says who and how many", () => {
    const a = line("agt_j1", { held: true, held_for: ["agt_j2"], addressed_to: [], exchange: { count: 49, allowance: 48 } });
    expect(a.held).toBe(true);
    expect(a.held_for).toEqual(["agt_j2"]);
    const b = line("agt_j2", { held: true, held_for: ["agt_j1"], addressed_to: [], exchange: { count: 50, allowance: 48 } });
    const notes = heldNotes([line("usr_a", {}), a, b], isPerson, nameOf);
    expect([...notes.keys()]).toEqual([b.id]);
    expect(notes.get(b.id)).toBe("J1 and J2 have sent each other 50 messages. They'll pick up when you say something.");
  });

  it("say a person's message let them go on once one came", () => {
    const a = line("agt_j1", { held: true, held_for: ["agt_j2"], exchange: { count: 5 } });
    const notes = heldNotes([a, line("agt_j2", { text: "not held" }), line("usr_m", {})], isPerson, nameOf);
    expect(notes.get(a.id)).toBe("J1 and J2 have sent each other 5 messages. Maya Chen's message let them go on.");
    expect(heldNotes([line("agt_j1", {})], isPerson, nameOf).size).toBe(0);
  });
});

describe("what agents say to each other, folded", () => {
  const line = (actor: string, fields: Record<string, unknown>) => lineOf(ev("message.post", actor, { text: "x", ...fields }), nameOf, "usr_a") as Line;
  const isAgent = (id: string) => id.startsWith("agt_") || id.startsWith("hrn_");

  it("is an agent's words to another agent, held or not; not to the room, nor a person's", () => {
    expect(isAgentTalk(line("agt_j1", { addressed_to: ["agt_j2"] }), isAgent)).toBe(true);
    expect(isAgentTalk(line("agt_j1", { addressed_to: [], held: true, held_for: ["agt_j2"] }), isAgent)).toBe(true);
    expect(isAgentTalk(line("agt_j1", { addressed_to: [] }), isAgent)).toBe(false);
    expect(isAgentTalk(line("agt_j1", { addressed_to: ["agt_j1"] }), isAgent)).toBe(false);
    expect(isAgentTalk(line("usr_a", { addressed_to: ["agt_j1"] }), isAgent)).toBe(false);
  });

  it("folds each stretch of two or more into one row with their faces, the count and the latest line", () => {
    const a = line("agt_j1", { text: "@J2 part 1", addressed_to: ["agt_j2"] });
    const b = line("agt_j2", { text: "@J1 part 2", addressed_to: ["agt_j1"] });
    const c = line("agt_j1", { text: "@J2 part 3", addressed_to: [], held: true, held_for: ["agt_j2"] });
    const toRoom = line("agt_j1", { text: "Done, Arjun", addressed_to: [] });
    const lone = line("agt_j2", { text: "@J1 one more", addressed_to: ["agt_j1"] });
    const folds = talkFolds([line("usr_a", {}), a, b, c, toRoom, lone], isAgent);
    expect([...folds.keys()]).toEqual([a.id]);
    const fold = folds.get(a.id)!;
    expect(fold.lines).toEqual([a, b, c]);
    expect(fold.faces).toEqual(["agt_j1", "agt_j2"]);
    expect(foldWords(fold, nameOf)).toEqual({ names: "J1 ⇄ J2", count: "3 messages", latest: "J1: @J2 part 3" });
  });

  it("ends a stretch at anything else drawn between its lines", () => {
    const a = line("agt_j1", { addressed_to: ["agt_j2"] });
    const b = line("agt_j2", { addressed_to: ["agt_j1"] });
    expect(talkFolds([a, null, b], isAgent).size).toBe(0);
    const c = line("agt_j1", { addressed_to: ["agt_j2"] });
    const d = line("agt_j2", { addressed_to: ["agt_j1"] });
    expect([...talkFolds([a, b, null, c, d], isAgent).keys()]).toEqual([a.id, c.id]);
  });
});

describe("who is working", () => {
  it("follows room.working and room.idle, and says it as the note does", () => {
    const now = Date.parse("2026-12-01T10:02:30.000Z");
    const working = foldWork([], ev("room.working", "sys", { working: [{ agent_id: "agt_j1", run_id: "run_1", since: "2026-12-01T10:00:00.000Z", heard_at: "2026-12-01T10:02:00.000Z", last_step: "Editing ascii-alphabet.html" }], idle: [] }));
    expect(workingWords(working, nameOf, now)).toBe("Working now: J1, 2 minutes in (last step: Editing ascii-alphabet.html)");
    const two = foldWork(working, ev("room.working", "sys", { working: [...working, { agent_id: "agt_j2", run_id: "run_2", since: "2026-12-01T10:02:10.000Z", heard_at: "2026-12-01T10:02:10.000Z" }] }));
    expect(workingWords(two, nameOf, now)).toBe("Working now: J1, 2 minutes in (last step: Editing ascii-alphabet.html); J2, less than a minute in");
    expect(foldWork(two, ev("message.post", "usr_a", { text: "hi" }))).toBe(two);
    expect(workingWords(foldWork(two, ev("room.idle", "sys", { since: "2026-12-01T10:03:00.000Z", idle: [] })), nameOf, now)).toBeNull();
    // One agent with several runs going is said once, with its count, since its oldest.
    const many = [0, 1, 2, 3].map((n) => ({ agent_id: "hrn_s", run_id: `run_${n}`, since: `2026-12-01T10:0${n}:00.000Z`, heard_at: "2026-12-01T10:02:00.000Z", last_step: `step ${n}` }));
    expect(workingWords(many, nameOf, now)).toBe("Working now: Scout · 4 runs, 2 minutes in (last step: step 3)");
    expect(workingWords([...many, ...two], nameOf, now)).toBe("Working now: Scout · 4 runs, 2 minutes in (last step: step 3); J1, 2 minutes in (last step: Editing ascii-alphabet.html); J2, less than a minute in");
  });
  it("keeps a run that is not finished, waiting on a card or gone quiet, until it ends", () => {
    const now = Date.parse("2026-12-01T10:02:30.000Z");
    const run = (run_id: string, state = "running", harness_id = "hrn_s") => ({ run_id, harness_id, agent_id: null, state });
    const card = (run_id: string, kind: "approval" | "question", answered_seq: number | null = null) => ({ run_id, kind, answered_seq });
    // The referee told the room it is idle (the turn fell silent): the waiting run stays.
    const waiting = goingRuns([run("run_1"), run("run_0", "completed")], [card("run_1", "approval")]);
    expect(waiting).toEqual([{ run_id: "run_1", by: "hrn_s", paused: false, waiting: "approval" }]);
    expect(workingWords([], nameOf, now, waiting)).toBe("Working now: Scout, waiting on an approval");
    // Several of one harness's runs are said once, with their count.
    const four = goingRuns([run("run_1"), run("run_2"), run("run_3", "paused"), run("run_4")], [card("run_2", "question"), card("run_1", "approval", 40)]);
    expect(workingWords([], nameOf, now, four)).toBe("Working now: Scout · 4 runs, waiting on a question");
    expect(workingWords([], nameOf, now, goingRuns([run("run_1", "paused")], []))).toBe("Working now: Scout, paused");
    expect(workingWords([], nameOf, now, goingRuns([run("run_1")], []))).toBe("Working now: Scout, still going");
    // A turn the referee counts and a run of its own are one entry, its runs counted once.
    const turn = { agent_id: "hrn_s", run_id: "run_1", since: "2026-12-01T10:00:00.000Z", heard_at: "2026-12-01T10:02:00.000Z" };
    expect(workingWords([turn], nameOf, now, goingRuns([run("run_1"), run("run_2")], [card("run_2", "approval")]))).toBe(
      "Working now: Scout · 2 runs, 2 minutes in, waiting on an approval",
    );
    expect(workingWords([], nameOf, now, goingRuns([run("run_1", "failed"), run("run_2", "cancelled")], []))).toBeNull();
  });
  it("makes a chip of an agent's several runs, which lists each by its goal, oldest first, and how it stands", () => {
    const now = Date.parse("2026-12-01T10:02:30.000Z");
    const run = (run_id: string, state = "running", harness_id = "hrn_s") => ({ run_id, harness_id, agent_id: null, state });
    const card = (run_id: string, kind: "approval" | "question") => ({ run_id, kind, answered_seq: null });
    const going = goingRuns([run("run_b"), run("run_a", "paused"), run("run_c"), run("run_j", "running", "agt_j1")], [card("run_c", "approval")]);
    const turn = { agent_id: "hrn_s", run_id: "run_t", since: "2026-12-01T10:00:00.000Z", heard_at: "2026-12-01T10:02:00.000Z" };
    const each = workingNow([turn], nameOf, now, going);
    expect(each.map((w) => [w.label, w.rest])).toEqual([
      ["Scout · 4 runs", ", 2 minutes in, waiting on an approval"],
      ["J1", ", still going"],
    ]);
    expect(each[0]!.runs).toEqual(["run_t", "run_b", "run_a", "run_c"]);
    expect(each[1]!.runs).toEqual(["run_j"]);
    const runs = new Map([
      ["run_b", { run_id: "run_b", goal: "Tag the **March** invoices", started_seq: 20 }],
      ["run_a", { run_id: "run_a", goal: "Pay\n  Initech", started_seq: 10 }],
      ["run_c", { run_id: "run_c", goal: `Reconcile ${"the ledger ".repeat(12)}`, started_seq: 30 }],
    ]);
    // A turn whose run the room has not read yet comes last, as "A run".
    expect(workingRuns(each[0]!.runs, runs, going)).toEqual([
      { run_id: "run_a", goal: "Pay Initech", how: "paused" },
      { run_id: "run_b", goal: "Tag the March invoices", how: "running" },
      { run_id: "run_c", goal: "Reconcile the ledger the ledger the ledger the ledger the ledger the ledger…", how: "waiting on an approval" },
      { run_id: "run_t", goal: "A run", how: "running" },
    ]);
  });
});
