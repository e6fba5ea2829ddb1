import type { ComponentChildren } from "preact";
import { useEffect, useRef } from "preact/hooks";

/** A modal dialog (the browser's own <dialog>: focus kept inside, Escape closes). */
export function Modal(props: { title: string; onClose: () => void; children: ComponentChildren; wide?: boolean }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current!;
    if (!dialog.open) dialog.showModal();
    const onCancel = (e: Event) => {
      e.preventDefault();
      props.onClose();
    };
    dialog.addEventListener("cancel", onCancel);
    return () => dialog.removeEventListener("cancel", onCancel);
  }, []);
  const id = `dlg-${props.title.replace(/\W+/g, "-").toLowerCase()}`;
  return (
    <dialog ref={ref} class={props.wide ? "modal wide" : "modal"} aria-labelledby={id}>
      <div class="modal-head">
        <h2 id={id}>{props.title}</h2>
        <button type="button" class="icon" aria-label="Close" onClick={props.onClose}>
          ✕
        </button>
      </div>
      {props.children}
    </dialog>
  );
}

/** Asks first: before something that cannot be undone, or that others carry over to their
 * side. `follows` are the sentences for what the harnesses that follow the room will do. */
export function Confirm(props: {
  title: string;
  body: string;
  follows?: string[];
  action: string;
  tone?: "danger" | "primary";
  onConfirm: () => void;
  onClose: () => void;
}) {
  return (
    <Modal title={props.title} onClose={props.onClose}>
      <p>{props.body}</p>
      {props.follows && props.follows.length > 0 && <p data-testid="follows">{props.follows.join(" ")}</p>}
      <div class="row end">
        <button type="button" onClick={props.onClose}>
          Cancel
        </button>
        <button
          type="button"
          class={props.tone ?? "danger"}
          onClick={() => {
            props.onConfirm();
            props.onClose();
          }}
        >
          {props.action}
        </button>
      </div>
    </Modal>
  );
}
