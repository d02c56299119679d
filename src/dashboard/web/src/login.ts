import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { ApiError, api, type Me } from "./api.js";

export function LoginPage(props: { onLogin(me: Me): void }) {
  const [error, setError] = useState<{ message: string; field?: string } | undefined>();
  const [busy, setBusy] = useState(false);
  const submit = async (event: SubmitEvent) => {
    event.preventDefault();
    const form = new FormData(event.target as HTMLFormElement);
    setBusy(true);
    try {
      props.onLogin(
        await api<Me>("POST", "/login", { username: form.get("username"), password: form.get("password") }),
      );
    } catch (err) {
      setError(err instanceof ApiError ? err.problem : { message: String(err) });
    } finally {
      setBusy(false);
    }
  };
  return html`<main id="main" class="login">
    <h1>Log in to tenantry</h1>
    <form onSubmit=${submit}>
      <label for="username">User name</label>
      <input id="username" name="username" autocomplete="username" required aria-invalid=${error?.field === "username"} />
      <label for="password">Password</label>
      <input id="password" name="password" type="password" autocomplete="current-password" required />
      ${error ? html`<p class="error" role="alert">${error.message}</p>` : null}
      <button type="submit" disabled=${busy}>Log in</button>
    </form>
  </main>`;
}
