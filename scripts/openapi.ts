// Writes docs/openapi.json, shared/http/route-table.json and shared/http/shadowing-routes.json from the route registry (`npm run openapi`); a test keeps each current.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { operations } from '../shared/http/registry';
import { buildOpenApi } from '../shared/http/openapi';
import { routeTable, shadowingRoutes } from '../shared/http/route-match';
import pkg from '../package.json';

const file = join(__dirname, '..', 'docs', 'openapi.json');
writeFileSync(file, `${JSON.stringify(buildOpenApi(operations, pkg.version), null, 2)}\n`);
console.log(`wrote ${file}`);

// The fallback function needs only methods and paths, not every operation's schemas.
const routesFile = join(__dirname, '..', 'shared', 'http', 'route-table.json');
writeFileSync(routesFile, `${JSON.stringify(routeTable(operations), null, 2)}\n`);
console.log(`wrote ${routesFile}`);

// The fixed-path check of every `{param}` function needs only the routes that can shadow one.
const shadowingFile = join(__dirname, '..', 'shared', 'http', 'shadowing-routes.json');
writeFileSync(shadowingFile, `${JSON.stringify(shadowingRoutes(operations), null, 2)}\n`);
console.log(`wrote ${shadowingFile}`);
