/**
 * The backup agent: the program of the backup agent image, run by a Job in the tenant's namespace
 * with the runtime's claim mounted. `backup|restore --dir <mounted claim> --key <object key>
 * --token-file <projected token> [--sha256 <archive's, for a restore>]`; the broker's URL and the
 * backup's key come from the environment (a Secret the backup controller made). Every request to
 * the store is presigned by tenantry's broker, which the agent shows its pod's token.
 * It prints progress lines, then `done <json>`; on failure `error: <reason>` as its last line
 * (the controller reads it from the pod's log) and exit code 1.
 */
import { parseArgs } from "node:util";
import { HttpStoreBroker } from "../broker/client.js";
import { S3ObjectStore } from "../store/s3.js";
import { AGENT_ENV, AGENT_TOKEN_PATH } from "./env.js";
import { backupVolume, restoreVolume } from "./volume.js";

function setting(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`the environment variable ${name} is not set`);
  return value;
}

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      dir: { type: "string" },
      key: { type: "string" },
      "token-file": { type: "string", default: AGENT_TOKEN_PATH },
      sha256: { type: "string" },
    },
  });
  const [mode] = positionals;
  if (mode !== "backup" && mode !== "restore")
    throw new Error(`mode must be backup or restore, not "${mode ?? ""}"`);
  if (!values.dir || !values.key) throw new Error("--dir and --key are required");
  const tenantKey = Buffer.from(setting(AGENT_ENV.backupKey), "base64");
  const store = new S3ObjectStore({
    broker: new HttpStoreBroker(setting(AGENT_ENV.brokerUrl), values["token-file"]),
  });
  let lastReported = 0;
  const onProgress = (bytes: number) => {
    if (bytes - lastReported < 16 * 1024 * 1024) return;
    lastReported = bytes;
    process.stdout.write(`progress ${bytes}\n`);
  };
  try {
    const options = { dir: values.dir, key: values.key, tenantKey, onProgress };
    const record =
      mode === "backup"
        ? await backupVolume(store, options)
        : await restoreVolume(store, { ...options, ...(values.sha256 ? { sha256: values.sha256 } : {}) });
    process.stdout.write(
      `done ${JSON.stringify({ size: record.size, files: record.files, sha256: record.sha256 })}\n`,
    );
  } finally {
    store.close();
  }
}

main().catch((err: unknown) => {
  const e = err as { message?: string; name?: string; code?: string };
  const reason = (e.message || e.code || e.name || String(err)).replace(/\s+/g, " ");
  process.stdout.write(`error: ${reason}\n`);
  process.exitCode = 1;
});
