// Search (docs/product/messages.md, Search): every word is required and the last is a prefix, so
// hits are asked for as the words are typed; a hit's snippet is text with the match
// marked (never markup), and a hit opens the room at the line.
import { useEffect, useRef, useState } from "preact/hooks";
import { useStore } from "./hooks";
import { formatTime } from "./hooks";
import { plainWords } from "../markdown";

interface Hit {
  kind: "message" | "step";
  space_id: string;
  room_id?: string;
  seq: number;
  ts?: string;
  author_id?: string | null;
  message_id?: string | null;
  run_id?: string | null;
  snippet?: { text: string; match?: boolean }[];
}

interface Answer {
  hits: Hit[];
  next_cursor: string | null;
}

/** Where a hit opens: its space (a room or a thread), at the line when it is a message. */
export function hitHref(hit: Pick<Hit, "space_id" | "message_id">): string {
  const room = `#/room/${encodeURIComponent(hit.space_id)}`;
  return hit.message_id ? `${room}/at/${encodeURIComponent(hit.message_id)}` : room;
}

/** Search, shown only where the gateway answers GET /v1/search (feature-detected). */
export function Search() {
  const store = useStore();
  const [q, setQ] = useState("");
  const [answer, setAnswer] = useState<Answer | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const asked = useRef(0);

  const ask = async (words: string, cursor?: string) => {
    const n = ++asked.current;
    try {
      const got = await store.api!.call<Answer>("GET", "/v1/search", undefined, { q: words, cursor });
      if (n !== asked.current) return; // a newer question was asked meanwhile
      setNote(null);
      setAnswer((old) => (cursor && old ? { hits: [...old.hits, ...got.hits], next_cursor: got.next_cursor } : got));
    } catch (err) {
      if (n !== asked.current) return;
      setAnswer(null);
      setNote((err as Error).message);
    }
  };

  // As the words are typed: a quarter of a second after the last key.
  useEffect(() => {
    const words = q.trim();
    if (!words) {
      asked.current += 1;
      setAnswer(null);
      setNote(null);
      return;
    }
    const timer = setTimeout(() => void ask(words), 250);
    return () => clearTimeout(timer);
  }, [q]);

  const close = () => {
    setQ("");
    setAnswer(null);
  };
  const titleOf = (id: string) => store.title(store.spaces.get(id) ?? store.archived?.find((s) => s.id === id) ?? { id, title: null, kind: "group" });

  return (
    <form
      role="search"
      class="search"
      onSubmit={(e) => {
        e.preventDefault();
        if (q.trim()) void ask(q.trim());
      }}
      onKeyDown={(e) => {
        if (e.key === "Escape") close();
        else if (e.key === "ArrowDown" || e.key === "ArrowUp") {
          // The arrows walk from the box through the hits and back, as a list box does.
          const hits = [...e.currentTarget.querySelectorAll<HTMLElement>("[data-testid=hit]")];
          const box = e.currentTarget.querySelector<HTMLElement>("#search");
          const at = hits.indexOf(document.activeElement as HTMLElement);
          const next = e.key === "ArrowDown" ? Math.min(at + 1, hits.length - 1) : at - 1;
          const to = next < 0 ? box : hits[next];
          if (to && hits.length) {
            e.preventDefault();
            to.focus();
          }
        }
      }}
    >
      <label for="search" class="sr-only">
        Search messages
      </label>
      <input id="search" type="search" placeholder="Search messages" autocomplete="off" value={q} onInput={(e) => setQ(e.currentTarget.value)} />
      {note && <p class="muted small">{note}</p>}
      {answer && (
        <div class="hits-box">
          <ul class="hits" aria-label="Search results" data-testid="hits">
            {answer.hits.length === 0 && <li class="muted">Nothing found.</li>}
            {answer.hits.map((h) => (
              <li key={`${h.kind}:${h.seq}:${h.message_id ?? h.run_id ?? ""}`}>
                <a href={hitHref(h)} onClick={close} data-testid="hit">
                  <span class="hit-head">
                    <strong>{titleOf(h.space_id)}</strong>
                    <span class="muted small">
                      {h.kind === "step" ? "a step of a run" : h.author_id ? store.nameOf(h.author_id) : ""}
                      {h.ts ? ` · ${formatTime(h.ts)}` : ""}
                    </span>
                  </span>
                  <span class="snippet">{(h.snippet ?? []).map((s, j) => (s.match ? <mark key={j}>{plainWords(s.text)}</mark> : <span key={j}>{plainWords(s.text)}</span>))}</span>
                </a>
              </li>
            ))}
          </ul>
          {answer.next_cursor && (
            <button type="button" class="link small" onClick={() => void ask(q.trim(), answer.next_cursor!)}>
              More results
            </button>
          )}
        </div>
      )}
    </form>
  );
}
