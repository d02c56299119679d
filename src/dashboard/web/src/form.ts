import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { ApiError, api } from "./api.js";

export interface Field {
  name: string;
  label: string;
  /** API fields (as the API names them in its errors) shown next to this input. */
  apiFields?: string[];
  /** Choices; the first is the default. */
  options?: string[];
  /** The initial text. Inputs are not controlled: a re-render (a live update) keeps what was typed. */
  value?: string;
  required?: boolean;
  /** A short example or rule shown under the input. */
  hint?: string;
}

/**
 * A form whose submission is one API call; the API's refusal is shown as it states it, next to
 * the field it names (or above the button when it names none).
 */
export function ActionForm(props: {
  id: string;
  title: string;
  fields: Field[];
  submit: string;
  method?: string;
  path: string;
  body?(values: Record<string, string>): unknown;
  onDone?(): void;
}) {
  const [error, setError] = useState<{ message: string; field?: string } | undefined>();
  const [done, setDone] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  // The input whose API field is the longest prefix of the one the API names (spec.rules[0].verbs[1]
  // goes to spec.rules[0].verbs rather than spec.rules[0]).
  const fieldOf = (apiField?: string) => {
    if (!apiField) return undefined;
    let best: { field: Field; length: number } | undefined;
    for (const f of props.fields) {
      for (const a of [f.name, ...(f.apiFields ?? [])]) {
        const matches = apiField === a || apiField.startsWith(`${a}.`) || apiField.startsWith(`${a}[`);
        if (matches && a.length > (best?.length ?? -1)) best = { field: f, length: a.length };
      }
    }
    return best?.field;
  };
  const onSubmit = async (event: SubmitEvent) => {
    event.preventDefault();
    const form = event.target as HTMLFormElement;
    const values = Object.fromEntries([...new FormData(form)].map(([k, v]) => [k, String(v)]));
    setBusy(true);
    setError(undefined);
    setDone(undefined);
    try {
      await api(props.method ?? "POST", props.path, props.body ? props.body(values) : values);
      setDone("Done.");
      form.reset();
      props.onDone?.();
    } catch (err) {
      setError(err instanceof ApiError ? err.problem : { message: String(err) });
    } finally {
      setBusy(false);
    }
  };
  const errorField = fieldOf(error?.field);
  return html`<form class="action" onSubmit=${onSubmit} aria-labelledby=${`${props.id}-title`}>
    <h3 id=${`${props.id}-title`}>${props.title}</h3>
    ${props.fields.map((f) => {
      const id = `${props.id}-${f.name}`;
      const invalid = errorField === f;
      const described = [invalid ? `${id}-error` : "", f.hint ? `${id}-hint` : ""].filter(Boolean).join(" ");
      return html`<div class="field">
        <label for=${id}>${f.label}</label>
        ${
          f.options
            ? html`<select id=${id} name=${f.name} aria-invalid=${invalid} aria-describedby=${described || undefined}>
              ${f.options.map((o) => html`<option value=${o}>${o}</option>`)}
            </select>`
            : html`<input
              id=${id}
              name=${f.name}
              defaultValue=${f.value ?? ""}
              required=${f.required ?? true}
              aria-invalid=${invalid}
              aria-describedby=${described || undefined}
            />`
        }
        ${f.hint ? html`<span class="hint" id=${`${id}-hint`}>${f.hint}</span>` : null}
        ${invalid ? html`<p class="error" id=${`${id}-error`} role="alert">${error!.message}</p>` : null}
      </div>`;
    })}
    ${error && !errorField ? html`<p class="error" role="alert">${error.message}</p>` : null}
    ${done ? html`<p class="ok" role="status">${done}</p>` : null}
    <button type="submit" disabled=${busy}>${props.submit}</button>
  </form>`;
}
