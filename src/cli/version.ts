import { readFileSync } from "node:fs";

/** What names a build: the package's version and the git commit it was built from. */
export interface BuildInfo {
  version: string;
  /** `-dirty` when the files differed from it; absent when built outside a git checkout. */
  commit?: string;
  /** When it was compiled; absent when running from the TypeScript sources. */
  builtAt?: string;
}

function readJson(url: URL): unknown {
  return JSON.parse(readFileSync(url, "utf8"));
}

/**
 * This build: dist/build-info.json, written by `npm run build` (scripts/build.mjs) beside the
 * compiled code; running from the TypeScript sources, the package's version alone.
 */
export function buildInfo(): BuildInfo {
  try {
    return readJson(new URL("../build-info.json", import.meta.url)) as BuildInfo;
  } catch {
    return { version: (readJson(new URL("../../package.json", import.meta.url)) as BuildInfo).version };
  }
}

/** One line: `tenantry 0.1.0 (commit 1a2b3c4d5e6f, built 2026-…)`. */
export function describeBuild(info: BuildInfo): string {
  const details = [
    ...(info.commit ? [`commit ${info.commit.replace(/^([0-9a-f]{12})[0-9a-f]*/, "$1")}`] : []),
    info.builtAt ? `built ${info.builtAt}` : "from the TypeScript sources",
  ];
  return `tenantry ${info.version} (${details.join(", ")})`;
}
