// Writes docs/openapi.json from the route registry (`npm run openapi`); a test keeps it current.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { operations } from '../shared/http/registry';
import { buildOpenApi } from '../shared/http/openapi';
import pkg from '../package.json';

const file = join(__dirname, '..', 'docs', 'openapi.json');
writeFileSync(file, `${JSON.stringify(buildOpenApi(operations, pkg.version), null, 2)}\n`);
console.log(`wrote ${file}`);
