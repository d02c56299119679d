/**
 * `npm run build`: tenantry's TypeScript (src/) compiled into JavaScript (dist/), file by file, beside
 * the other files its code reads at run time (Go wrapper modules, the echo server, …), and
 * dist/build-info.json naming the build (version, git commit). Then the dashboard's client, when stale.
 *
 * esbuild only strips types, one file at a time: the whole tree takes about a second, so `npm start`
 * and the bin in a checkout rebuild whenever a source is newer than dist/. Checking types is tsc's job
 * (`npm run typecheck`, `npm test`); a full tsc emit takes minutes on two cores, and even incremental
 * it type-checks what changed before it writes anything.
 *
 * Plain JavaScript, so that it runs before anything is compiled:
 *   node scripts/build.mjs             build everything
 *   node scripts/build.mjs --if-stale  only when a source, package.json or the git commit changed
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { pathToFileURL } from "node:url";

const root = join(import.meta.dirname, "..");
const SRC = join(root, "src");
const DIST = join(root, "dist");
export const BUILD_INFO = join(DIST, "build-info.json");
/** Vite builds the dashboard's client from here into dist/dashboard/client (src/dashboard/build.ts). */
const CLIENT_SOURCES = join(SRC, "dashboard", "web");
const CLIENT_OUTPUT = join(DIST, "dashboard", "client");

/** Every file under src/ that the build reads (tests and the dashboard's client excepted), and the folders. */
function sourceTree(dir = SRC, tree = { files: [], dirs: [] }) {
  tree.dirs.push(dir);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (path !== CLIENT_SOURCES) sourceTree(path, tree);
    } else if (!entry.name.endsWith(".test.ts")) {
      tree.files.push(path);
    }
  }
  return tree;
}

/** The output a source becomes: its .js (with a source map) or a copy. */
function outputsOf(source) {
  const out = join(DIST, relative(SRC, source));
  return source.endsWith(".ts") ? [out.replace(/\.ts$/, ".js"), out.replace(/\.ts$/, ".js.map")] : [out];
}

/**
 * The commit checked out, with `-dirty` when files differ from it; outside a git checkout the one
 * TENANTRY_COMMIT names (the Dockerfile's build argument), if any.
 */
function gitCommit() {
  if (process.env.TENANTRY_COMMIT) return process.env.TENANTRY_COMMIT;
  try {
    const options = { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] };
    const commit = execFileSync("git", ["rev-parse", "HEAD"], options).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], options).trim();
    return dirty ? `${commit}-dirty` : commit;
  } catch {
    return undefined;
  }
}

function mtime(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

/**
 * Whether dist/ is older than any source (a folder's time changes when a file is added or removed),
 * than package.json or this script; with `commit`, also whether it was built from another commit.
 */
export function stale({ commit = false } = {}) {
  const built = mtime(BUILD_INFO);
  if (built === undefined) return true;
  const { files, dirs } = sourceTree();
  const inputs = [...files, ...dirs, join(root, "package.json"), import.meta.filename];
  if (inputs.some((path) => (mtime(path) ?? Number.POSITIVE_INFINITY) > built)) return true;
  if (!commit) return false;
  const info = JSON.parse(readFileSync(BUILD_INFO, "utf8"));
  return info.commit !== gitCommit();
}

/** Compiles src/ into dist/ and removes what no source makes any more. Answers the seconds it took. */
export async function compile() {
  const started = performance.now();
  const { build } = await import("esbuild");
  const { files } = sourceTree();
  const typescript = files.filter((f) => f.endsWith(".ts"));
  await build({
    entryPoints: typescript,
    outdir: DIST,
    outbase: SRC,
    format: "esm",
    platform: "node",
    target: "node22.19",
    sourcemap: true,
    logLevel: "warning",
    tsconfig: join(root, "tsconfig.build.json"),
  });
  for (const asset of files.filter((f) => !f.endsWith(".ts"))) {
    const [out] = outputsOf(asset);
    mkdirSync(dirname(out), { recursive: true });
    copyFileSync(asset, out);
  }
  removeLeftovers(new Set(files.flatMap(outputsOf)));
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  const commit = gitCommit();
  const info = { version: pkg.version, ...(commit ? { commit } : {}), builtAt: new Date().toISOString() };
  writeFileSync(BUILD_INFO, `${JSON.stringify(info, null, 2)}\n`);
  return (performance.now() - started) / 1000;
}

/** Files under dist/ that no source makes (its source was deleted or renamed), the client excepted. */
function removeLeftovers(expected, dir = DIST) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (path === CLIENT_OUTPUT || path === BUILD_INFO) continue;
    if (entry.isDirectory()) removeLeftovers(expected, path);
    else if (!expected.has(path)) rmSync(path);
  }
}

/** Compiles when stale; answers whether it did. */
export async function buildIfStale({ commit = false, log = () => {} } = {}) {
  if (!stale({ commit })) return false;
  log("compiling tenantry (src → dist)…\n");
  const seconds = await compile();
  log(`compiled in ${seconds.toFixed(1)} s\n`);
  return true;
}

if (import.meta.filename === process.argv[1]) {
  const log = (line) => process.stderr.write(line);
  if (process.argv.includes("--if-stale")) {
    await buildIfStale({ commit: true, log });
  } else {
    log(`compiled src → dist in ${(await compile()).toFixed(1)} s\n`);
    // The dashboard's client (Vite, a development dependency), when missing or older than its sources.
    const { ensureDashboardAssets } = await import(pathToFileURL(join(DIST, "dashboard", "build.js")).href);
    if (!(await ensureDashboardAssets(log))) log("the dashboard's client is up to date\n");
  }
}
