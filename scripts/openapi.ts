// Writes docs/openapi.json and shared/http/route-table.json from the route registry (`npm run openapi`); a test keeps both current.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { operations } from '../shared/http/registry';
import { buildOpenApi } from '../shared/http/openapi';
import { routeTable } from '../shared/http/route-match';
import pkg from '../package.json';

const file = join(__dirname, '..', 'docs', 'openapi.json');
writeFileSync(file, `${JSON.stringify(buildOpenApi(operations, pkg.version), null, 2)}\n`);
console.log(`wrote ${file}`);

// The fallback function needs only methods and paths, not every operation's schemas.
const routesFile = join(__dirname, '..', 'shared', 'http', 'route-table.json');
writeFileSync(routesFile, `${JSON.stringify(routeTable(operations), null, 2)}\n`);
console.log(`wrote ${routesFile}`);
