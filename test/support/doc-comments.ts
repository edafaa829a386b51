/**
 * What an editor would show no help for in the client's emitted declarations: read with the
 * compiler's own services, as an editor reads them (a member that implements a documented
 * interface member shows that member's comment).
 */
import { join } from 'node:path';
import ts from 'typescript';

/**
 * What the declarations lack: one line per exported name, member, parameter or result without
 * help (a comment; `@param` for each parameter; `@returns` unless a call returns nothing).
 */
export function undocumented(typesDir: string): string[] {
  const index = join(typesDir, 'client/index.d.ts');
  const program = ts.createProgram([index], {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
    types: [],
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  const ours = (d: ts.Node) => d.getSourceFile().fileName.startsWith(typesDir);
  const missing: string[] = [];
  const text = (parts: ts.SymbolDisplayPart[]) => ts.displayPartsToString(parts).trim();

  const checkSignature = (sig: ts.Signature, where: string) => {
    const decl = sig.getDeclaration();
    if (decl && !ours(decl)) return;
    if (!text(sig.getDocumentationComment(checker))) missing.push(`${where}: no comment`);
    const tags = sig.getJsDocTags().filter((t) => t.name === 'param');
    const documented = new Set(tags.map((t) => (t.text ?? []).find((p) => p.kind === 'parameterName')?.text ?? ''));
    for (const p of sig.getParameters()) if (!documented.has(p.name)) missing.push(`${where}: no @param ${p.name}`);
    // What a call gives back, unless it gives nothing (a constructor gives its class).
    const constructs = decl !== undefined && (ts.isConstructorDeclaration(decl) || ts.isConstructSignatureDeclaration(decl));
    const returns = checker.typeToString(sig.getReturnType());
    if (!constructs && returns !== 'void' && returns !== 'Promise<void>' && !sig.getJsDocTags().some((t) => t.name === 'returns')) {
      missing.push(`${where}: no @returns`);
    }
  };

  const checkMembers = (type: ts.Type, owner: string) => {
    for (const member of checker.getPropertiesOfType(type)) {
      const decls = (member.declarations ?? []).filter(ours);
      if (decls.length === 0) continue; // from the platform or another package (Error's message, Long)
      const modifiers = ts.getCombinedModifierFlags(decls[0]!);
      if (modifiers & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected) || member.name.startsWith('#') || member.name === 'prototype') continue;
      const where = `${owner}.${member.name}`;
      const memberType = checker.getTypeOfSymbol(member);
      const calls = member.flags & ts.SymbolFlags.Method ? memberType.getCallSignatures() : [];
      if (calls.length > 0) for (const sig of calls) checkSignature(sig, `${where}()`);
      else if (!text(member.getDocumentationComment(checker))) missing.push(`${where}: no comment`);
    }
  };

  const moduleSymbol = checker.getSymbolAtLocation(program.getSourceFile(index)!)!;
  for (const exported of checker.getExportsOfModule(moduleSymbol)) {
    const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
    const name = exported.name;
    const decl = symbol.declarations?.[0];
    if (!decl) continue;
    if (symbol.flags & ts.SymbolFlags.Function) {
      for (const sig of checker.getTypeOfSymbol(symbol).getCallSignatures()) checkSignature(sig, `${name}()`);
      continue;
    }
    if (!text(symbol.getDocumentationComment(checker))) missing.push(`${name}: no comment`);
    if (symbol.flags & ts.SymbolFlags.Class) {
      const staticSide = checker.getTypeOfSymbol(symbol);
      for (const sig of staticSide.getConstructSignatures()) if (sig.getDeclaration()) checkSignature(sig, `new ${name}()`);
      checkMembers(staticSide, name);
      checkMembers(checker.getDeclaredTypeOfSymbol(symbol), name);
    } else if (symbol.flags & (ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias | ts.SymbolFlags.Enum)) {
      const type = symbol.flags & ts.SymbolFlags.Enum ? checker.getTypeOfSymbol(symbol) : checker.getDeclaredTypeOfSymbol(symbol);
      if (type.flags & ts.TypeFlags.Object || type.flags & ts.TypeFlags.Intersection || symbol.flags & ts.SymbolFlags.Enum) checkMembers(type, name);
    }
  }
  return [...new Set(missing)].sort();
}
