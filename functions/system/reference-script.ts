import { http } from '../../shared/http/handler';
import { getApiReferenceScript } from '../../shared/domain/health/operations';
import { referenceScript } from '../../shared/domain/health/reference-page';

export const handler = http(getApiReferenceScript, () => referenceScript());
