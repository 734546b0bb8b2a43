// Removes the previous build from dist/ but keeps dist/.gitkeep, which the Go embed needs
// (vite's emptyOutDir is off for that reason). Also re-creates .gitkeep if it went missing.
import { readdirSync, rmSync, writeFileSync, existsSync, mkdirSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const dist = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist');
if (!existsSync(dist)) mkdirSync(dist, { recursive: true });
for (const name of readdirSync(dist)) {
  if (name === '.gitkeep') continue;
  rmSync(join(dist, name), { recursive: true, force: true });
}
const keep = join(dist, '.gitkeep');
if (!existsSync(keep)) writeFileSync(keep, '');
