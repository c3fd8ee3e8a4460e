// The CodeMirror 6 pieces the Portcullis UI uses, bundled into one script
// (../static/vendor/codemirror.js) by `make web-bundle`.
import { basicSetup } from "codemirror";
import { EditorView } from "@codemirror/view";
import { EditorState } from "@codemirror/state";
import { yaml } from "@codemirror/lang-yaml";
import { setDiagnostics, lintGutter } from "@codemirror/lint";

// fromTextarea replaces a textarea with an editor that keeps the textarea's
// value in step, so that forms submit the editor's text as usual.
export function fromTextarea(textarea, label) {
  const view = new EditorView({
    state: EditorState.create({
      doc: textarea.value,
      extensions: [
        basicSetup,
        yaml(),
        lintGutter(),
        EditorState.readOnly.of(textarea.readOnly),
        EditorView.contentAttributes.of({ "aria-label": label }),
        EditorView.updateListener.of((u) => {
          if (u.docChanged) textarea.value = u.state.doc.toString();
        }),
      ],
    }),
  });
  textarea.parentNode.insertBefore(view.dom, textarea);
  textarea.hidden = true;
  return view;
}

// goToLine moves the cursor to a 1-based line and focuses the editor.
export function goToLine(view, line) {
  const n = Math.max(1, Math.min(line, view.state.doc.lines));
  const pos = view.state.doc.line(n).from;
  view.dispatch({ selection: { anchor: pos }, scrollIntoView: true });
  view.focus();
}

// showErrors marks each error's line (1-based) in the editor, with its
// message, as the server's Validate reported them; an empty list clears.
export function showErrors(view, errors) {
  const doc = view.state.doc;
  const diagnostics = errors
    .filter((e) => e.line >= 1 && e.line <= doc.lines)
    .map((e) => {
      const l = doc.line(e.line);
      return { from: l.from, to: l.to, severity: "error", message: e.message };
    });
  view.dispatch(setDiagnostics(view.state, diagnostics));
}
