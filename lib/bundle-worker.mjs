// Builds many esbuild entries at once for lib/bundle.ts (which must stay synchronous: the CDK stack's
// constructor calls it). Reads { common, jobs: [{ name, entry, dir }], concurrency } as JSON on stdin,
// runs esbuild's async `build` for up to `concurrency` entries at a time (esbuild's service is
// multi-threaded; one `buildSync` after another left the cores idle), and writes
// { metafiles: { [name]: metafile } } or { error: { name, entry, message } } as JSON on stdout.
import { build } from 'esbuild';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const { common, jobs, concurrency } = JSON.parse(Buffer.concat(chunks).toString('utf8'));
const metafiles = {};
let next = 0;
let failed;
async function lane() {
  while (!failed && next < jobs.length) {
    const job = jobs[next++];
    try {
      const result = await build({ ...common, entryPoints: { index: job.entry }, outdir: job.dir });
      metafiles[job.name] = result.metafile;
    } catch (error) {
      failed ??= { name: job.name, entry: job.entry, message: error && error.message ? error.message : String(error) };
    }
  }
}
await Promise.all(Array.from({ length: Math.max(1, concurrency) }, lane));
process.stdout.write(JSON.stringify(failed ? { error: failed } : { metafiles }));
