// Files as a room draws them (docs/product/messages.md, Attachments): a photo inline, by its
// thumbnail; anything else a chip that opens (a PDF) or downloads. Links are signed for
// this person and run out after ten minutes, so a link that has run out is replaced by
// the bytes fetched with the person's own token.
import { useEffect, useState } from "preact/hooks";
import { clockOf, expired, heardWords, opensInline, sameOrigin, sizeWords, type LinkedFile, type RoomFile } from "../files";
import { formatTime, useStore } from "./hooks";

/** Open or save a file whose link has run out: its bytes with the token, as a blob. */
async function openByToken(file: LinkedFile, api: { blob: (id: string) => Promise<Blob> }, toast: (t: string) => void): Promise<void> {
  try {
    const blob = await api.blob(file.attachment_id);
    const url = URL.createObjectURL(blob);
    const a = document.createElement("a");
    a.href = url;
    if (opensInline(file.mime_type)) a.target = "_blank";
    else a.download = file.name;
    a.rel = "noopener";
    a.click();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
  } catch (err) {
    toast((err as Error).message);
  }
}

export function FileChip(props: { file: LinkedFile; note?: string }) {
  const store = useStore();
  const { file } = props;
  const href = sameOrigin(file.url, location.origin);
  const words = `${sizeWords(file.byte_size)}${file.version > 1 ? ` · v${file.version}` : ""}${props.note ? ` · ${props.note}` : ""}`;
  if (!href) {
    return (
      <span class="file-chip" data-testid="file">
        <span class="chip-name">{file.name}</span> <span class="muted small">{words}</span>
      </span>
    );
  }
  const inline = opensInline(file.mime_type);
  return (
    <a
      class="file-chip"
      data-testid="file"
      href={href}
      {...(inline ? { target: "_blank", rel: "noopener" } : { download: file.name })}
      aria-label={`${inline ? "Open" : "Download"} ${file.name}, ${words}`}
      onClick={(e) => {
        if (!expired(file, Date.now())) return;
        e.preventDefault();
        void openByToken(file, store.api!, (t) => store.toast(t));
      }}
    >
      <span aria-hidden="true">{inline ? "↗" : "⬇"}</span> <span class="chip-name">{file.name}</span> <span class="muted small">{words}</span>
    </a>
  );
}

/** A photo in the line, by its thumbnail; opens the whole photo. */
function Photo(props: { file: LinkedFile }) {
  const store = useStore();
  const { file } = props;
  const signed = sameOrigin(file.thumbnail_url ?? file.url, location.origin);
  const [src, setSrc] = useState<string | undefined>(expired(file, Date.now()) ? undefined : signed);
  useEffect(() => {
    if (src) return;
    // The link ran out (or there is none): the thumbnail's bytes with the token instead.
    let url: string | null = null;
    store
      .api!.blob(file.attachment_id, Boolean(file.thumbnail))
      .then((blob) => setSrc((url = URL.createObjectURL(blob))))
      .catch(() => {});
    return () => {
      if (url) URL.revokeObjectURL(url);
    };
  }, [src]);
  const full = sameOrigin(file.url, location.origin);
  const ratio = file.width && file.height ? `${file.width} / ${file.height}` : undefined;
  return (
    <a
      class="photo"
      href={full ?? "#"}
      target="_blank"
      rel="noopener"
      aria-label={`Open the photo ${file.name}`}
      onClick={(e) => {
        if (full && !expired(file, Date.now())) return;
        e.preventDefault();
        void openByToken(file, store.api!, (t) => store.toast(t));
      }}
    >
      {src ? (
        <img src={src} alt={file.name} style={ratio ? { aspectRatio: ratio } : undefined} data-testid="photo" onError={() => setSrc(undefined)} />
      ) : (
        <span class="photo-wait muted small">{file.name}</span>
      )}
    </a>
  );
}

/** A voice note in the line: a player, and what Chips heard in it under it (ADR 0137). */
function VoiceNote(props: { file: LinkedFile }) {
  const store = useStore();
  const { file } = props;
  const signed = sameOrigin(file.url, location.origin);
  const [src, setSrc] = useState<string | undefined>(expired(file, Date.now()) ? undefined : signed);
  useEffect(() => {
    if (src) return;
    // The link ran out (or there is none): the bytes with the token instead.
    let url: string | null = null;
    store
      .api!.blob(file.attachment_id)
      .then((blob) => setSrc((url = URL.createObjectURL(blob))))
      .catch(() => {});
    return () => {
      if (url) URL.revokeObjectURL(url);
    };
  }, [src]);
  const heard = heardWords(file);
  const length = clockOf(file.duration_ms);
  return (
    <figure class="voice-note" data-testid="voice-note">
      <audio controls preload="metadata" src={src} aria-label={`Voice note${length ? `, ${length}` : ""}`} data-testid="voice-player" onError={() => setSrc(undefined)} />
      {length && <span class="muted small voice-length">{length}</span>}
      <figcaption>
        {heard.words && (
          <q class="transcript" data-testid="transcript">
            {heard.words}
          </q>
        )}
        {heard.note && (
          <span class={`muted small${heard.waiting ? " waiting" : ""}`} data-testid="transcript-note">
            {heard.note}
          </span>
        )}
      </figcaption>
    </figure>
  );
}

/** The files under a line's words. */
export function Attachments(props: { files: LinkedFile[]; pending?: boolean }) {
  const photos = props.files.filter((f) => f.kind === "photo" && !props.pending);
  const notes = props.files.filter((f) => f.kind === "voice_note" && !props.pending);
  const others = props.files.filter((f) => (f.kind !== "photo" && f.kind !== "voice_note") || props.pending);
  return (
    <div class="attachments">
      {photos.map((f) => (
        <Photo key={f.attachment_id} file={f} />
      ))}
      {notes.map((f) => (
        <VoiceNote key={f.attachment_id} file={f} />
      ))}
      {others.map((f) => (
        <FileChip key={f.attachment_id} file={f} {...(props.pending ? { note: "sending…" } : {})} />
      ))}
    </div>
  );
}

/** The room's Files, for its sheet: the current version of each, newest first. */
export function RoomFiles(props: { spaceId: string }) {
  const store = useStore();
  const files = store.files.get(props.spaceId);
  useEffect(() => {
    void store.loadFiles(props.spaceId);
  }, [props.spaceId]);
  return (
    <section aria-labelledby="files-head">
      <h3 id="files-head">Files</h3>
      {files === undefined ? (
        <p class="muted small">Loading…</p>
      ) : files.length === 0 ? (
        <p class="muted small">Nothing has been posted here yet.</p>
      ) : (
        <ul class="room-files" data-testid="room-files">
          {files.map((f) => (
            <li key={f.attachment_id}>
              <FileChip file={f} />
              <span class="muted small">
                {f.by.name ?? store.nameOf(f.by.id)} · {formatTime(f.at)}
              </span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
