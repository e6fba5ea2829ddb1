// An agent's face (ADR 0153): one emoji, or a picture its harness uploaded, drawn wherever the
// agent is; with neither, or a picture that does not load, the initial of its name as before.
// Pure, so what is drawn is unit-tested; ui/Face.tsx draws it.
import { sameOrigin } from "./files";
import type { Participant } from "./protocol";

export type Drawn = { emoji: string } | { picture: string; initial: string } | { initial: string };

/** The first letter of a name, as the faces drew it before agents had faces. */
export function initialOf(name: string): string {
  return (name.trim()[0] ?? "?").toUpperCase();
}

/** What to draw for a participant: its emoji, its picture (on this origin), or its initial. */
export function drawnFace(p: Pick<Participant, "face" | "face_url"> | undefined, name: string, origin: string): Drawn {
  const initial = initialOf(name);
  const face = p?.face;
  if (!face) return { initial };
  if (face.startsWith("att_")) {
    const picture = sameOrigin(p?.face_url ?? undefined, origin);
    return picture ? { picture, initial } : { initial };
  }
  return { emoji: face };
}

/** Whether a participant has a face of its own (not just an initial). */
export function hasFace(p: Pick<Participant, "face"> | undefined): boolean {
  return !!p?.face;
}

/** An emoji face as words may carry it ("🦊 Fox"), for a picker that can hold only text. */
export function withEmoji(p: Pick<Participant, "face"> | undefined, name: string): string {
  const face = p?.face;
  return face && !face.startsWith("att_") ? `${face} ${name}` : name;
}
