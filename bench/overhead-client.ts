/**
 * The load side of the overhead benchmark, in its own process (as a caller is, in production):
 * interleaves GET /api/v1/agents/{id} against the local runtime with the same GetItem made
 * directly on the same DynamoDB Local, and prints both sets of timings as JSON.
 */
import http from 'node:http';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';

const { url, key, endpoint, table, pk, sk, path, iterations, warmup } = JSON.parse(process.argv[2]) as {
  url: string; key: string; endpoint: string; table: string; pk: string; sk: string; path: string; iterations: number; warmup: number;
};

const doc = DynamoDBDocumentClient.from(
  new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }),
);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const { hostname, port } = new URL(url);

function get(target = path): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ hostname, port, path: target, method: 'GET', agent, headers: { 'x-api-key': key } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

async function api(): Promise<number> {
  const t = performance.now();
  const status = await get();
  if (status !== 200) throw new Error(`GET answered ${status}`);
  return performance.now() - t;
}

async function raw(): Promise<number> {
  const t = performance.now();
  const out = await doc.send(new GetCommand({ TableName: table, Key: { pk, sk }, ConsistentRead: true }));
  if (!out.Item) throw new Error('item missing');
  return performance.now() - t;
}

async function main() {
  for (let i = 0; i < warmup; i++) { await api(); await raw(); }
  const apiTimes: number[] = [];
  const rawTimes: number[] = [];
  for (let i = 0; i < iterations; i++) {
    // Alternate which goes first, so drift of the machine hits both alike.
    if (i % 2) { apiTimes.push(await api()); rawTimes.push(await raw()); }
    else { rawTimes.push(await raw()); apiTimes.push(await api()); }
  }
  // The HTTP hop and the middleware alone: a GET that touches no dependency.
  const healthTimes: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const t = performance.now();
    await get('/api/v1/health');
    healthTimes.push(performance.now() - t);
  }
  process.stdout.write(JSON.stringify({ apiTimes, rawTimes, healthTimes }));
  agent.destroy();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
