/**
 * `getAgent` → `GetAgent`, `api-key-usage` → `ApiKeyUsage`, `API keys` → `APIKeys`. Construct ids
 * come from registry names, never from positions, so logical ids stay put as the registry grows.
 */
export function pascalCase(name: string): string {
  return name
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((part) => part[0].toUpperCase() + part.slice(1))
    .join('');
}
