/**
 * The backup agent: the program of the backup agent image, run by a Job in the tenant's namespace
 * with the runtime's claim mounted. `backup|restore --dir <mounted claim> --key <object key>`;
 * the store and the tenant's key come from the environment (a Secret the backup controller made).
 * It prints progress lines, then `done <json>`; on failure `error: <reason>` as its last line
 * (the controller reads it from the pod's log) and exit code 1.
 */
import { parseArgs } from "node:util";
import { S3ObjectStore } from "../store/s3.js";
import { AGENT_ENV } from "./env.js";
import { backupVolume, restoreVolume } from "./volume.js";

function setting(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`the environment variable ${name} is not set`);
  return value;
}

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: { dir: { type: "string" }, key: { type: "string" } },
  });
  const [mode] = positionals;
  if (mode !== "backup" && mode !== "restore")
    throw new Error(`mode must be backup or restore, not "${mode ?? ""}"`);
  if (!values.dir || !values.key) throw new Error("--dir and --key are required");
  const tenantKey = Buffer.from(setting(AGENT_ENV.tenantKey), "base64");
  const store = new S3ObjectStore({
    endpoint: setting(AGENT_ENV.endpoint),
    bucket: setting(AGENT_ENV.bucket),
    region: process.env[AGENT_ENV.region] ?? "us-east-1",
    accessKeyId: setting(AGENT_ENV.accessKeyId),
    secretAccessKey: setting(AGENT_ENV.secretAccessKey),
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
      mode === "backup" ? await backupVolume(store, options) : await restoreVolume(store, options);
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
