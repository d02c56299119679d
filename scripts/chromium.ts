/**
 * Debian's Chromium for the dashboard's browser tests: `/usr/bin/chromium`, installed with apt-get
 * when missing (about 350 MB; root only). playwright-core drives it; no browser is downloaded.
 * Run directly (`npx tsx scripts/chromium.ts`) to install it ahead of a test run.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";

export const CHROMIUM = "/usr/bin/chromium";

function aptGet(args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = spawn("apt-get", ["-o", "DPkg::Lock::Timeout=600", ...args], {
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    const collect = (chunk: Buffer) => {
      output += chunk;
      // apt's own progress lines, for a long install.
      for (const line of chunk.toString().split("\n"))
        if (/^(Get|Unpacking|Setting up)/.test(line)) process.stderr.write(`  ${line.slice(0, 100)}\n`);
    };
    child.stdout.on("data", collect);
    child.stderr.on("data", collect);
    child.on("error", (err) => resolve({ code: 127, output: err.message }));
    child.on("close", (code) => resolve({ code: code ?? 1, output }));
  });
}

let installing: Promise<string> | undefined;

/** The Chromium binary, installed from Debian's packages first when missing. Throws saying why it could not. */
export function ensureChromium(): Promise<string> {
  installing ??= (async () => {
    if (existsSync(CHROMIUM)) return CHROMIUM;
    if (process.getuid?.() !== 0)
      throw new Error(`${CHROMIUM} is missing; as root: apt-get install -y --no-install-recommends chromium`);
    process.stderr.write("installing Debian's chromium (apt-get install chromium)…\n");
    const install = ["install", "-y", "--no-install-recommends", "chromium"];
    let result = await aptGet(install);
    if (result.code !== 0 && /Unable to locate package/i.test(result.output)) {
      process.stderr.write("apt-get update (the package lists do not know chromium yet)…\n");
      await aptGet(["update"]);
      result = await aptGet(install);
    }
    if (result.code !== 0 || !existsSync(CHROMIUM))
      throw new Error(
        `apt-get install chromium failed: ${result.output.trim().split("\n").slice(-2).join(" ")}`,
      );
    process.stderr.write("chromium installed\n");
    return CHROMIUM;
  })();
  return installing;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`${await ensureChromium()}\n`);
}
