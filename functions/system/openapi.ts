import { http } from '../../shared/http/handler';
import { getOpenApi } from '../../shared/domain/health/operations';
// The document is generated from the registry at build time (`npm run openapi`, kept current by a
// test), so this function bundles JSON instead of every operation's schemas.
import document from '../../docs/openapi.json';

export const handler = http(getOpenApi, () => document);
