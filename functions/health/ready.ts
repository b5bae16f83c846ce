import { http } from '../../shared/http/handler';
import { getReadiness } from '../../shared/domain/health/operations';
import { readiness } from '../../shared/domain/health/service';

export const handler = http(getReadiness, () => readiness());
