import { UserError } from "../common/index.js";
import { describeError, statusCode, statusOf, statusReason } from "../kube/index.js";

/**
 * What the CLI prints for a failure, and its exit code: 0 ok, 1 failure, 2 bad input, 3 not found,
 * 4 already exists. An API server's refusal prints its own message (which names the field), never
 * the raw HTTP response.
 */
export function errorReport(err: unknown): { exitCode: number; message: string } {
  if (err instanceof UserError) return { exitCode: err.exitCode, message: err.message };
  const code = statusCode(err);
  if (code === undefined) return { exitCode: 1, message: describeError(err) };
  const status = statusOf(err);
  const message = status?.message ?? describeError(err);
  if (code === 404) return { exitCode: 3, message };
  if (code === 409 && statusReason(err) === "AlreadyExists") return { exitCode: 4, message };
  if (code === 400 || code === 403 || code === 422) return { exitCode: 2, message };
  return { exitCode: 1, message: status?.message ? `${message} (HTTP ${code})` : message };
}
