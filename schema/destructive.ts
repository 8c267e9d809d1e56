// Which statements of a migra plan may lose data or integrity. Conservative on purpose:
// every DROP counts except the ones known to be harmless, and any column type change
// counts (a cast can fail or truncate). migra changes an index or constraint by dropping
// and recreating it under the same name, so such a pair is not destructive.

const unquote = (name: string) => name.replace(/"/g, '').split('.').pop()!.toLowerCase();

function recreatedNames(statements: string[]): Set<string> {
  const names = new Set<string>();
  for (const s of statements) {
    const index = /create\s+(?:unique\s+)?index\s+(?:if\s+not\s+exists\s+)?("?[\w.$"]+)\s+on\b/i.exec(s);
    if (index) names.add(unquote(index[1]));
    const constraint = /\badd\s+constraint\s+("[^"]+"|\w+)/i.exec(s);
    if (constraint) names.add(unquote(constraint[1]));
  }
  return names;
}

function isHarmlessDrop(statement: string, recreated: Set<string>): boolean {
  const withoutColumnDrops = statement.replace(/\bdrop\s+(not\s+null|default)\b/gi, '');
  if (!/\bdrop\b/i.test(withoutColumnDrops)) return true;
  const index = /^\s*drop\s+index\s+(?:if\s+exists\s+)?("?[\w.$"]+)/i.exec(statement);
  if (index) return recreated.has(unquote(index[1]));
  const constraint = /\bdrop\s+constraint\s+(?:if\s+exists\s+)?("[^"]+"|\w+)/i.exec(statement);
  if (constraint) return recreated.has(unquote(constraint[1]));
  return false;
}

const changesColumnType = (statement: string) => /\balter\s+column\s+("[^"]+"|\w+)\s+(set\s+data\s+)?type\b/i.test(statement);

export function destructiveStatements(statements: string[]): string[] {
  const recreated = recreatedNames(statements);
  return statements.filter((s) => changesColumnType(s) || !isHarmlessDrop(s, recreated));
}
