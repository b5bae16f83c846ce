import { http } from '../../shared/http/handler';
import { createApiKey } from '../../shared/domain/api-keys/operations';
import { issueApiKey } from '../../shared/domain/api-keys/service';

export const handler = http(createApiKey, ({ caller, body }) => issueApiKey(caller.organizationId, body));
