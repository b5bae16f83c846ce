import { http } from '../../shared/http/handler';
import { getApiReference } from '../../shared/domain/health/operations';
import { referencePage } from '../../shared/domain/health/reference-page';

export const handler = http(getApiReference, () => referencePage());
