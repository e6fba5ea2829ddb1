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

/** Asks before something that cannot be undone. */
export function Confirm(props: { title: string; body: string; action: string; onConfirm: () => void; onClose: () => void }) {
  return (
    <Modal title={props.title} onClose={props.onClose}>
      <p>{props.body}</p>
      <div class="row end">
        <button type="button" onClick={props.onClose}>
          Cancel
        </button>
        <button
          type="button"
          class="danger"
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
