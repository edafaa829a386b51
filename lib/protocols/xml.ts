/**
 * Reading untrusted XML (Atom request bodies) and writing XML answers. Reading uses
 * @rgrove/parse-xml, a strict XML 1.0 parser, bounded: a size limit, a depth limit, no DTD at
 * all (a document that declares one is refused before parsing, so no entity can be defined or
 * expanded; the five predefined entities and character references decode, and any other
 * entity reference is not well-formed). Names are read by their local part, whatever prefix a
 * client chose (`i:type`, `p4:type`, `xsi:type` are all `type`; `<d2p1:ActiveMessageCount>`
 * is `ActiveMessageCount`), since the .NET, JS and legacy clients each pick their own
 * prefixes for the same namespaces.
 */
import { parseXml as parseDocument, XmlElement as ParsedElement, XmlError, XmlText } from '@rgrove/parse-xml';
import { BrokerError } from '../errors.js';

/** Atom bodies are a few KB; a rule with many parameters stays far below this. */
export const MAX_XML_BYTES = 256 * 1024;
/** How many levels of elements may nest inside the root element. */
export const MAX_XML_DEPTH = 32;

/** One element: its attributes (local names), its text, and its children in document order. */
export interface XmlElement {
  name: string;
  attributes: Record<string, string>;
  text: string;
  children: XmlElement[];
}

const badXml = (why: string) => new BrokerError('BadRequest', `body: ${why}`, { field: 'body' });
const tooDeep = () => badXml(`nests elements more than ${MAX_XML_DEPTH} deep`);

/** Parses a document into its root element; 400 naming `body` for anything not plain, bounded, well-formed XML. */
export function parseXml(text: string): XmlElement {
  if (Buffer.byteLength(text, 'utf8') > MAX_XML_BYTES) throw badXml(`the XML document is larger than ${MAX_XML_BYTES} bytes`);
  if (/<!DOCTYPE|<!ENTITY/i.test(text)) throw badXml('a document type declaration is not accepted');
  let root: ParsedElement | null;
  try {
    root = parseDocument(text).root;
  } catch (error) {
    // The parser's message ends in an excerpt of the input; the first line says what and where.
    if (error instanceof XmlError) throw badXml(`is not well-formed XML (${error.message.split('\n')[0]})`);
    // The parser descends one call per element: a document nested thousands deep (256 KB holds
    // 37,000 levels) runs out of stack before the depth check below could see it.
    if (error instanceof RangeError) throw tooDeep();
    throw error;
  }
  if (root === null) throw badXml('an XML document has exactly one root element');
  if (depthBeyond(root, MAX_XML_DEPTH)) throw tooDeep();
  return toElement(root);
}

/** Whether any element lies more than `limit` levels inside `root`; a loop, so no depth can overflow it. */
function depthBeyond(root: ParsedElement, limit: number): boolean {
  const pending: [ParsedElement, number][] = [[root, 0]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [element, depth] = next;
    if (depth > limit) return true;
    for (const c of element.children) if (c instanceof ParsedElement) pending.push([c, depth + 1]);
  }
  return false;
}

/** `p4:type` is `type`: the name after its prefix. */
const localName = (name: string) => name.slice(name.indexOf(':') + 1);

function toElement(node: ParsedElement): XmlElement {
  const attributes: Record<string, string> = {};
  for (const [k, v] of Object.entries(node.attributes)) {
    // Namespace declarations (`xmlns`, `xmlns:p4`) say nothing the local names need.
    if (k === 'xmlns' || k.startsWith('xmlns:')) continue;
    attributes[localName(k)] = v;
  }
  let text = '';
  const children: XmlElement[] = [];
  // Comments and processing instructions are left out; CDATA sections come as text.
  for (const c of node.children) {
    if (c instanceof XmlText) text += c.text;
    else if (c instanceof ParsedElement) children.push(toElement(c));
  }
  return { name: localName(node.name), attributes, text: children.length > 0 ? text.trim() : text, children };
}

/** The first child of that local name, matched case-sensitively as the schemas spell them. */
export function child(element: XmlElement | undefined, name: string): XmlElement | undefined {
  return element?.children.find((c) => c.name === name);
}

/** The text of the first child of that name, or undefined. */
export function childText(element: XmlElement | undefined, name: string): string | undefined {
  return child(element, name)?.text;
}

/** Escapes text for element content and attribute values. */
export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);
}

/** `<name>text</name>`, the text escaped; nothing when the value is undefined. */
export function element(name: string, value: string | number | boolean | undefined): string {
  if (value === undefined) return '';
  return `<${name}>${escapeXml(String(value))}</${name}>`;
}
