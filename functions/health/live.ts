import { http } from '../../shared/http/handler';
import { getHealth } from '../../shared/domain/health/operations';
import { liveness } from '../../shared/domain/health/liveness';

export const handler = http(getHealth, () => liveness());
