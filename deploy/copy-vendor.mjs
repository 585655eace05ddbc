// Copy the front-end libraries installed by `npm ci` into static/vendor/ (git-ignored).
// Run by `./dev` and the Dockerfile; nothing third-party is committed or loaded from a CDN.
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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
  ["plotly.js-dist-min/plotly.min.js", "plotly/plotly.min.js"],
  // Monaco's AMD build (loader.js + require): the whole directory, because chunk names are
  // content-hashed and change with every release. Its source maps are not shipped.
  ["monaco-editor/min/vs", "monaco/vs"],
];

// Directories whose sourcemap comments point at files we do not ship. Django's
// ManifestStaticFilesStorage (and WhiteNoise's compressed variant) rewrites these comments and
// fails on the missing .map files, so the comment lines are removed at copy time. The patterns
// are the ones Django's storage looks for (whole lines only).
const stripSourcemaps = ["monaco"];
const SOURCEMAP_PATTERNS = {
  ".js": /^\/\/# sourceMappingURL=.*$/gm,
  ".css": /^\/\*#[ \t]sourceMappingURL=.*\*\/[ \t]*$/gm,
};

function stripDirectory(directory) {
  let stripped = 0;
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) {
      stripped += stripDirectory(path);
      continue;
    }
    const extension = Object.keys(SOURCEMAP_PATTERNS).find((ext) => entry.name.endsWith(ext));
    if (!extension) continue;
    const text = readFileSync(path, "utf8");
    const cleaned = text.replace(SOURCEMAP_PATTERNS[extension], "");
    if (cleaned !== text) {
      writeFileSync(path, cleaned);
      stripped += 1;
    }
  }
  return stripped;
}

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
let stripped = 0;
for (const directory of stripSourcemaps) {
  stripped += stripDirectory(join(vendor, directory));
}
console.log(
  `copy-vendor: ${files.length} entries copied into static/vendor/ ` +
    `(sourcemap comments removed from ${stripped} files)`,
);
