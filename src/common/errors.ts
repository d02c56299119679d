/**
 * An error caused by the user's input or environment, carrying one line that says what is wrong
 * and what to do. The CLI prints only the message (no stack) and exits with `exitCode`.
 */
export class UserError extends Error {
  constructor(
    message: string,
    readonly exitCode = 2,
  ) {
    super(message);
    this.name = "UserError";
  }
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
