import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import type { Line, Run, RunCard } from "../protocol";
import { Face } from "./Face";
import { useMenu, useStore } from "./hooks";
import { Confirm, Modal } from "./Modal";
import { LineView } from "./LineView";
import { AskCard, RunBlock } from "./Cards";
import { Composer, type Draft } from "./Composer";
import { RoomSheet } from "./Sheet";
import { MuteItem } from "./Inbox";
import { harnessesOf, routesOf } from "../composer";
import { askState, askWords, foldWords, heldNotes, pauseWords, talkFolds, type Ask, type TalkFold } from "../agents";
import { followersOf, followerSides, followWords } from "../follows";
import { lockedNote } from "../may";
import { WorkingNow } from "./Working";

type Item = { seq: number; line?: Line; run?: Run; card?: RunCard; ask?: Ask };

export function RoomView(props: { spaceId: string; at?: string | null }) {
  const store = useStore();
  const room = store.room(props.spaceId);
  const space = store.spaces.get(props.spaceId) ?? store.archived?.find((s) => s.id === props.spaceId);
  const sheet = room.sheet;
  const title = store.title(sheet ?? space ?? { id: props.spaceId, title: null, kind: "group" });
  const [draft, setDraft] = useState<Draft>({ mode: "new" });
  const [sheetOpen, setSheetOpen] = useState(false);
  const menuWrap = useRef<HTMLDivElement>(null);
  const [menu, setMenu] = useMenu(menuWrap);
  const [dialog, setDialog] = useState<"rename" | "archive" | "delete" | null>(null);
  const scroller = useRef<HTMLDivElement>(null);
  const nearBottom = useRef(true);
  const lastHeight = useRef(0);
  const firstSeq = useRef<number | null>(null);

  useEffect(() => store.markRead(props.spaceId), [space?.message_count, props.spaceId]);

  // Opened at a line (a search hit): read back until it is there, then bring it to the
  // middle and mark it. `found` stays on it until another line is asked for.
  const [found, setFound] = useState<string | null>(null);
  const sought = useRef<string | null>(null);
  useEffect(() => {
    const at = props.at;
    if (!at || sought.current === at || room.loading) return;
    // A line's id (a search hit, an approval's, a run's from "Working now"), or its seq (a
    // notification's link).
    const el = document.getElementById(`line-${at}`) ?? (/^\d+$/.test(at) ? document.querySelector<HTMLElement>(`[data-seq="${at}"]`) : null);
    if (el) {
      sought.current = at;
      nearBottom.current = false;
      el.scrollIntoView({ block: "center" });
      setFound(el.id.startsWith("line-") ? el.id.slice("line-".length) : at);
      return;
    }
    if (room.start) {
      sought.current = at;
      store.toast("That line is no longer in the room.");
      return;
    }
    if (!room.loadingOlder) void store.loadOlder(props.spaceId);
  });

  const sending = [...store.sending.entries()].filter(([, l]) => l.space_id === props.spaceId);
  const oldest = room.lines[0]?.seq ?? Number.MAX_SAFE_INTEGER;
  const inView = (seq: number) => room.start || seq >= oldest;
  const inRun = (c: RunCard) => {
    const run = room.runs.get(c.run_id);
    return run !== undefined && inView(run.started_seq);
  };
  const items: Item[] = [
    ...room.lines.map((line) => ({ seq: line.seq, line })),
    ...[...room.asks.values()].filter((a) => inView(a.seq)).map((ask) => ({ seq: ask.seq, ask })),
    ...[...room.runs.values()].filter((r) => inView(r.started_seq)).map((run) => ({ seq: run.started_seq, run })),
    // A run's approval or question is drawn inside its run (two alike from two runs can
    // then be told apart); only one whose run is not in view stands on its own.
    ...[...room.cards.values()].filter((c) => inView(c.asked_seq) && !inRun(c)).map((card) => ({ seq: card.asked_seq, card })),
  ].sort((a, b) => a.seq - b.seq);
  const threads = new Map(
    [...store.spaces.values()].filter((s) => s.kind === "thread" && s.parent_space_id === props.spaceId).map((s) => [s.root_message_id ?? "", s.id]),
  );
  const pins = room.lines.filter((l) => l.pinned && !l.deleted);
  const routes = routesOf(room.lines, harnessesOf(sheet?.members ?? [], store.nameOf));
  const held = heldNotes(room.lines, (id) => store.participants.get(id)?.kind === "person" || id === store.me?.id, store.nameOf);
  const hasAgents = (sheet?.members ?? []).some((m) => m.kind === "agent" || m.kind === "harness");
  const isAgent = (id: string) => {
    const kind = store.participants.get(id)?.kind;
    return kind === "agent" || kind === "harness";
  };
  const folds = talkFolds(
    items.map((i) => i.line ?? null),
    isAgent,
  );
  const folded = new Map<string, string>();
  for (const [first, fold] of folds) for (const l of fold.lines) folded.set(l.id, first);
  const [opened, setOpened] = useState<ReadonlySet<string>>(new Set());
  const leads = (sheet?.members ?? []).filter((m) => m.lead);

  // An ask waits a minute: draw it again when its minute is up (and each second before,
  // for the count).
  const [, tick] = useState(0);
  const waiting = [...room.asks.values()].some((a) => askState(a, Date.now()) === "waiting");
  useEffect(() => {
    if (!waiting) return;
    const timer = setInterval(() => tick((n) => n + 1), 1000);
    return () => clearInterval(timer);
  }, [waiting]);
  const isThread = (sheet ?? space)?.kind === "thread";
  const parent = sheet?.parent_space_id ? store.rooms.get(sheet.parent_space_id) : undefined;
  const root = parent?.lines.find((l) => l.id === sheet?.root_message_id);
  const parentTitle = (id: string) => {
    const row = store.spaces.get(id) ?? store.archived?.find((s) => s.id === id);
    return row ? store.title(row) : "a room";
  };

  // Keep the view at the bottom as lines arrive, and in place when older ones are added.
  useLayoutEffect(() => {
    const el = scroller.current;
    if (!el) return;
    const first = room.lines[0]?.seq ?? null;
    if (firstSeq.current !== null && first !== null && first < firstSeq.current) {
      el.scrollTop += el.scrollHeight - lastHeight.current;
    } else if (nearBottom.current) {
      el.scrollTop = el.scrollHeight;
    }
    firstSeq.current = first;
    lastHeight.current = el.scrollHeight;
  });

  const onScroll = () => {
    const el = scroller.current!;
    nearBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
    if (el.scrollTop < 120) void store.loadOlder(props.spaceId);
  };

  const act = async (what: () => Promise<unknown>) => {
    setMenu(false);
    try {
      await what();
    } catch (err) {
      store.toast((err as Error).message);
    }
  };

  const lineView = (line: Line) => (
    <LineView
      key={line.id}
      line={line}
      room={room}
      threadId={threads.get(line.id) ?? null}
      route={routes.get(line.id) ?? null}
      found={line.id === found}
      heldNote={held.get(line.id) ?? null}
      may={sheet?.may ?? null}
      closed={closed}
      onReply={() => setDraft({ mode: "reply", line })}
      onEdit={() => setDraft({ mode: "edit", line })}
    />
  );

  const closed = (sheet ?? space)?.state === "closed";
  const locked = (sheet ?? space)?.locked ?? false;
  // The menu offers only what the door would take from me, as the sheet's `may` says it
  // (ADR 0142), and in a locked room one line saying so. Delete on a direct room nobody
  // could open again archives it instead.
  const acts = sheet?.may ?? null;
  const lockNote = lockedNote(sheet, acts);
  const archivesInstead = acts?.delete === "archive";
  // What the sheet that asks first promises for the harnesses that follow the room.
  const follows = (action: "delete" | "archive") =>
    followWords(followerSides(action, followersOf(sheet?.members ?? [], store.participants), store.me?.id ?? null), (id) => store.participants.get(id)?.name ?? null);
  return (
    <div class="room">
      <header class="room-head">
        <a class="back icon" href="#/" aria-label="Back to rooms">
          ←
        </a>
        <div class="room-name">
          <h1>
            <button type="button" onClick={() => setSheetOpen(true)} aria-haspopup="dialog" data-testid="room-name">
              {title}
            </button>
          </h1>
          <span class="muted small" data-testid="room-facts">
            {isThread && sheet?.parent_space_id ? `Thread in ${parentTitle(sheet.parent_space_id)} · ` : ""}
            {sheet ? `${sheet.members.length} ${sheet.members.length === 1 ? "member" : "members"}` : ""}
            {closed ? " · Archived" : ""}
            {locked ? " · Locked" : ""}
            {leads.length ? ` · ${leads.map((m) => m.name ?? store.nameOf(m.participant_id)).join(", ")} leads` : ""}
          </span>
          <WorkingNow room={room} />
        </div>
        {isThread && sheet?.parent_space_id && (
          <a class="small" href={`#/room/${encodeURIComponent(sheet.parent_space_id)}`}>
            Back to the room
          </a>
        )}
        <div class="menu-wrap" ref={menuWrap}>
          <button type="button" class="icon" aria-label="Room actions" aria-haspopup="menu" aria-expanded={menu} onClick={() => setMenu(!menu)} data-testid="room-actions">
            ⋯
          </button>
          {menu && (
            <div class="menu" role="menu">
              {lockNote && (
                <p role="menuitem" aria-disabled="true" class="menu-note small muted">
                  {lockNote}
                </p>
              )}
              {acts?.rename && (
                <button role="menuitem" type="button" onClick={() => (setMenu(false), setDialog("rename"))}>
                  Rename…
                </button>
              )}
              {acts?.unarchive && (
                <button role="menuitem" type="button" onClick={() => act(() => store.api!.change(props.spaceId, { state: "open" }))}>
                  Unarchive
                </button>
              )}
              {acts?.archive && (
                <button role="menuitem" type="button" onClick={() => (setMenu(false), setDialog("archive"))}>
                  Archive…
                </button>
              )}
              {(acts?.lock || acts?.unlock) && (
                <button role="menuitem" type="button" onClick={() => act(() => store.api!.lock(props.spaceId, !locked))}>
                  {locked ? "Unlock changes" : "Lock changes"}
                </button>
              )}
              {/* The door lets any person here pause; the menu asks it only while agents are here. */}
              {acts?.pause && store.features.referee && hasAgents && !closed && (
                <button
                  role="menuitem"
                  type="button"
                  onClick={() => act(() => store.send({ type: "exchange.set", space_id: props.spaceId, state: room.pause ? "running" : "paused" }))}
                >
                  {room.pause ? "Let them carry on" : "Pause the agents"}
                </button>
              )}
              <button role="menuitem" type="button" onClick={() => (setMenu(false), setSheetOpen(true))}>
                People…
              </button>
              <MuteItem spaceId={props.spaceId} onDone={() => setMenu(false)} />
              {acts?.delete && (
                <button role="menuitem" type="button" class="danger-text" onClick={() => (setMenu(false), setDialog("delete"))}>
                  Delete…
                </button>
              )}
            </div>
          )}
        </div>
      </header>
      {isThread && root && (
        <p class="root-quote">
          In reply to {store.nameOf(root.author_id)}: {(root.text ?? "").slice(0, 140)}
        </p>
      )}
      {room.pause && !closed && (
        <div class="paused" role="region" aria-label="The agents are paused" data-testid="paused">
          <p>{pauseWords(room.pause, store.nameOf)}</p>
          <button type="button" class="primary" onClick={() => act(() => store.send({ type: "exchange.set", space_id: props.spaceId, state: "running" }))}>
            Let them carry on
          </button>
        </div>
      )}
      {pins.length > 0 && (
        <div class="pins" aria-label="Pinned">
          <strong>Pinned</strong>
          {pins.map((p) => (
            <a key={p.id} href={`#line-${p.id}`} class="pin" onClick={(e) => {
                e.preventDefault();
                const first = folded.get(p.id);
                if (first && !opened.has(first)) setOpened(new Set([...opened, first]));
                requestAnimationFrame(() => document.getElementById(`line-${p.id}`)?.scrollIntoView({ block: "center" }));
              }}>
              {(p.text ?? p.kind).slice(0, 40)}
            </a>
          ))}
        </div>
      )}
      <div class="timeline" ref={scroller} onScroll={onScroll} role="log" aria-label={`Messages in ${title}`} tabIndex={0}>
        {room.loadingOlder && <p class="muted center">Loading earlier messages…</p>}
        {room.start && !room.loading && <p class="muted center small">This is the beginning of {title}.</p>}
        {room.loading && <p class="muted center">Loading…</p>}
        {room.error && (
          <p class="error center" role="alert">
            {room.error}
          </p>
        )}
        {items.map((item) =>
          item.line ? (
            folded.has(item.line.id) ? (
              folded.get(item.line.id) === item.line.id && (
                <FoldRow
                  key={`fold-${item.line.id}`}
                  fold={folds.get(item.line.id)!}
                  open={opened.has(item.line.id) || folds.get(item.line.id)!.lines.some((l) => l.id === props.at)}
                  onToggle={() => {
                    const next = new Set(opened);
                    if (!next.delete(item.line!.id)) next.add(item.line!.id);
                    setOpened(next);
                  }}
                  heldNote={folds.get(item.line.id)!.lines.map((l) => held.get(l.id) ?? null).reduce((last, n) => n ?? last, null as string | null)}
                  nameOf={store.nameOf}
                  lineView={lineView}
                />
              )
            ) : (
              lineView(item.line)
            )
          ) : item.ask ? (
            <div key={item.ask.id} class={`system-line ask ${askState(item.ask, Date.now())}`} data-testid="ask" role="status">
              {askWords(item.ask, Date.now(), store.nameOf)}
            </div>
          ) : item.run ? (
            <RunBlock key={item.run.run_id} run={item.run} room={room} found={item.run.run_id === found} />
          ) : (
            <AskCard key={item.card!.id} card={item.card!} room={room} />
          ),
        )}
        {sending.map(([key, line]) => (
          <LineView key={line.id} line={line} room={room} threadId={null} route={null} heldNote={null} found={false} may={null} closed={closed} sendingKey={key} onReply={() => {}} onEdit={() => {}} />
        ))}
      </div>
      {closed ? (
        <p class="closed-note">
          This room is archived.
          {acts?.unarchive && (
            <>
              {" "}
              <button type="button" class="link" onClick={() => act(() => store.api!.change(props.spaceId, { state: "open" }))}>
                Unarchive
              </button>
            </>
          )}
        </p>
      ) : (
        <Composer spaceId={props.spaceId} title={title} draft={draft} setDraft={setDraft} onArchive={acts?.archive ? () => setDialog("archive") : undefined} />
      )}
      {sheetOpen && <RoomSheet spaceId={props.spaceId} onClose={() => setSheetOpen(false)} />}
      {dialog === "rename" && <Rename spaceId={props.spaceId} current={title} onClose={() => setDialog(null)} />}
      {dialog === "archive" && (
        <Confirm
          title={`Archive ${title}?`}
          body="It leaves everybody's list for the Archived row at its foot. Its history and its people stay, and anyone in it can unarchive it."
          follows={follows("archive")}
          action="Archive the room"
          tone="primary"
          onClose={() => setDialog(null)}
          onConfirm={() => void act(() => store.api!.change(props.spaceId, { state: "closed" }))}
        />
      )}
      {dialog === "delete" && (
        // A direct room nobody could open again is archived by Delete, and its sheet says so.
        <Confirm
          title={`Delete ${title}?`}
          body={
            archivesInstead
              ? "Nobody could open this direct room again, so it is archived rather than deleted: it moves to the Archived row with its history and its people, and anyone in it can unarchive it."
              : "The room, its threads, everything said in them, its files and its search entries are erased for everybody. This cannot be undone. What it cost stays counted against its harnesses' budgets."
          }
          follows={follows(archivesInstead ? "archive" : "delete")}
          action={archivesInstead ? "Archive the room" : "Delete the room"}
          tone={archivesInstead ? "primary" : "danger"}
          onClose={() => setDialog(null)}
          onConfirm={() =>
            void act(async () => {
              await store.api!.erase(props.spaceId);
              if (!archivesInstead) location.hash = "#/";
            })
          }
        />
      )}
    </div>
  );
}

function Rename(props: { spaceId: string; current: string; onClose: () => void }) {
  const store = useStore();
  const [title, setTitle] = useState(props.current);
  const [error, setError] = useState<string | null>(null);
  return (
    <Modal title="Rename the room" onClose={props.onClose}>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          try {
            await store.api!.change(props.spaceId, { title: title.trim() });
            props.onClose();
          } catch (err) {
            setError((err as Error).message);
          }
        }}
      >
        <label for="rename-title">New title</label>
        <input id="rename-title" required maxLength={200} value={title} onInput={(e) => setTitle(e.currentTarget.value)} />
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <div class="row end">
          <button type="button" onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" class="primary">
            Rename
          </button>
        </div>
      </form>
    </Modal>
  );
}

/** Agents' words to each other, folded into one row (docs/product/spaces.md): their faces with a
 * two-way arrow, the count and the latest line, open on a tap. Closed, the referee's margin
 * note for held words is said under the row; open, under its line. */
function FoldRow(props: {
  fold: TalkFold;
  open: boolean;
  onToggle: () => void;
  heldNote: string | null;
  nameOf: (id: string) => string;
  lineView: (line: Line) => preact.JSX.Element;
}) {
  const words = foldWords(props.fold, props.nameOf);
  return (
    <div class={`fold${props.open ? " open" : ""}`} data-testid="fold">
      <button type="button" class="fold-row" aria-expanded={props.open} onClick={props.onToggle}>
        <span class="faces" aria-hidden="true">
          {props.fold.faces.map((id, i) => (
            <span key={id} class="fold-face">
              {i > 0 && <span class="fold-arrow">⇄</span>}
              <Face id={id} />
            </span>
          ))}
        </span>
        <span class="fold-names">{words.names}</span>
        <span class="fold-count small muted" data-testid="fold-count">
          {words.count}
        </span>
        <span class="fold-latest small" data-testid="fold-latest">
          {words.latest}
        </span>
      </button>
      {props.open ? (
        <div class="fold-lines">{props.fold.lines.map(props.lineView)}</div>
      ) : (
        props.heldNote && (
          <p class="held-note small muted" data-testid="held-note">
            {props.heldNote}
          </p>
        )
      )}
    </div>
  );
}
