import { useCallback, useEffect, useState } from "preact/hooks";
import { ApiError, api, onChange } from "./api.js";

export interface Loaded<T> {
  data?: T;
  error?: string;
  reload(): void;
}

/** Data from the API, fetched again when the server says one of `kinds` changed (no polling). */
export function useLive<T>(path: string, kinds: string[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: string }>({});
  const load = useCallback(() => {
    api<T>("GET", path).then(
      (data) => setState({ data }),
      (err: unknown) =>
        setState((s) => ({ ...s, error: err instanceof ApiError ? err.message : String(err) })),
    );
  }, [path]);
  useEffect(() => {
    load();
    return onChange((changed) => {
      if (kinds.some((k) => changed.has(k))) load();
    });
  }, [load, kinds.join(",")]);
  return { ...state, reload: load };
}
