import { join } from "node:path";
import { defineConfig } from "vite";

const here = import.meta.dirname;

export default defineConfig({
  root: here,
  base: "/",
  logLevel: "warn",
  build: {
    outDir: join(here, "..", "..", "..", "dist", "dashboard", "client"),
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
  },
});
