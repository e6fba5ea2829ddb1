import { Face } from "./Face";
import { Fragment } from "preact";
import { useRef, useState } from "preact/hooks";
import { goingRuns, workingNow, workingRuns } from "../agents";
import type { Room } from "../store";
import { useMenu, useStore } from "./hooks";

/**
 * "Working now" under the room's name: one entry an agent, and an agent with several runs
 * going as a chip ("Scout · 4 runs") that opens the list of them on a tap, Enter or Space,
 * and closes on Escape or a press outside; each run in the list opens the room at its block.
 * The list hangs under the line, outside it, since the line is cut short to one.
 */
export function WorkingNow(props: { room: Room }) {
  const store = useStore();
  const { room } = props;
  const wrap = useRef<HTMLDivElement>(null);
  const [open, setOpen] = useMenu(wrap);
  const [whose, setWhose] = useState<string | null>(null);
  // Every run not finished stands here, the ones waiting on a card too (not only the turns
  // the referee still counts, which a run waiting past its silence drops).
  const going = goingRuns(room.runs.values(), room.cards.values());
  const each = workingNow(room.work, store.nameOf, Date.now(), going);
  if (!each.length) return null;
  const shown = open ? each.find((w) => w.who === whose && w.runs.length > 1) : undefined;
  const list = (who: string) => `working-runs-${who}`;
  return (
    <div class="working-line" ref={wrap}>
      <span class="muted small working" data-testid="working">
        Working now:{" "}
        {each.map((w, i) => (
          <Fragment key={w.who}>
            {i > 0 && "; "}
            <Face id={w.who} only class="solo" />
            {w.runs.length > 1 ? (
              <button
                type="button"
                class="link"
                aria-haspopup="menu"
                aria-expanded={shown?.who === w.who}
                aria-controls={shown?.who === w.who ? list(w.who) : undefined}
                onClick={() => {
                  const again = shown?.who === w.who;
                  setWhose(w.who);
                  setOpen(!again);
                }}
              >
                {w.label}
              </button>
            ) : (
              w.label
            )}
            {w.rest}
          </Fragment>
        ))}
      </span>
      {shown && (
        <div class="menu" role="menu" id={list(shown.who)} aria-label={`${store.nameOf(shown.who)}'s runs`} data-testid="working-runs">
          {workingRuns(shown.runs, room.runs, going).map((r) => {
            const href = `#/room/${encodeURIComponent(room.id)}/at/${encodeURIComponent(r.run_id)}`;
            return (
              <a
                key={r.run_id}
                role="menuitem"
                href={href}
                onClick={(e) => {
                  setOpen(false);
                  // Asked for again where the room already is: no hashchange comes, so go to it here.
                  if (location.hash === href) {
                    e.preventDefault();
                    document.getElementById(`line-${r.run_id}`)?.scrollIntoView({ block: "center" });
                  }
                }}
              >
                <span class="working-goal">{r.goal}</span> <span class="muted small">· {r.how}</span>
              </a>
            );
          })}
        </div>
      )}
    </div>
  );
}
