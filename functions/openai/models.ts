import { http } from '../../shared/http/handler';
import { openAiListModels as op } from '../../shared/domain/openai-compat/operations';
import { listModels } from '../../shared/domain/openai-compat/completions';

export const handler = http(op, ({ caller }) => listModels(caller.organizationId));
