import { useState } from "preact/hooks";
import { useStore } from "./hooks";

interface Hit {
  kind: string;
  space_id: string;
  room_id?: string;
  message_id?: string | null;
  snippet?: { text: string; match?: boolean }[] | string;
}

/** Search, shown only where the gateway answers GET /v1/search (feature-detected). */
export function Search() {
  const store = useStore();
  const [q, setQ] = useState("");
  const [hits, setHits] = useState<Hit[] | null>(null);
  return (
    <form
      role="search"
      class="search"
      onSubmit={async (e) => {
        e.preventDefault();
        if (!q.trim()) return;
        try {
          const answer = await store.api!.call<{ hits: Hit[] }>("GET", "/v1/search", undefined, { q });
          setHits(answer.hits ?? []);
        } catch (err) {
          store.toast((err as Error).message);
        }
      }}
    >
      <label for="search" class="sr-only">
        Search messages
      </label>
      <input id="search" type="search" placeholder="Search messages" value={q} onInput={(e) => setQ(e.currentTarget.value)} />
      {hits && (
        <ul class="hits" aria-label="Search results">
          {hits.length === 0 && <li class="muted">Nothing found.</li>}
          {hits.map((h, i) => (
            <li key={i}>
              <a href={`#/room/${encodeURIComponent(h.space_id)}`} onClick={() => setHits(null)}>
                <strong>{store.title(store.spaces.get(h.space_id) ?? { id: h.space_id, title: null, kind: "group" })}</strong>{" "}
                {Array.isArray(h.snippet)
                  ? h.snippet.map((s, j) => (s.match ? <mark key={j}>{s.text}</mark> : <span key={j}>{s.text}</span>))
                  : h.snippet}
              </a>
            </li>
          ))}
        </ul>
      )}
    </form>
  );
}
