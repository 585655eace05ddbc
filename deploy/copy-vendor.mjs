// Copy the front-end libraries installed by `npm ci` into static/vendor/ (git-ignored).
// Run by `./dev` and the Dockerfile; nothing third-party is committed or loaded from a CDN.
import { cpSync, existsSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const modules = join(root, "node_modules");
const vendor = join(root, "static", "vendor");

// [source inside node_modules, destination inside static/vendor]
const files = [
  ["bootstrap/dist/css/bootstrap.min.css", "bootstrap/bootstrap.min.css"],
  ["bootstrap/dist/css/bootstrap.min.css.map", "bootstrap/bootstrap.min.css.map"],
  ["bootstrap/dist/js/bootstrap.bundle.min.js", "bootstrap/bootstrap.bundle.min.js"],
  ["bootstrap/dist/js/bootstrap.bundle.min.js.map", "bootstrap/bootstrap.bundle.min.js.map"],
  ["bootstrap-icons/font/bootstrap-icons.min.css", "bootstrap-icons/bootstrap-icons.min.css"],
  ["bootstrap-icons/font/fonts", "bootstrap-icons/fonts"],
  ["htmx.org/dist/htmx.min.js", "htmx/htmx.min.js"],
];

rmSync(vendor, { recursive: true, force: true });
for (const [src, dest] of files) {
  const from = join(modules, src);
  if (!existsSync(from)) {
    console.error(`copy-vendor: ${src} is missing; run "npm ci" first.`);
    process.exit(1);
  }
  const to = join(vendor, dest);
  mkdirSync(dirname(to), { recursive: true });
  cpSync(from, to, { recursive: true });
}
console.log(`copy-vendor: ${files.length} entries copied into static/vendor/`);
