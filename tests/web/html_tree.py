"""A small HTML tree for the dashboard's tests, built with the standard library's html.parser."""
from html.parser import HTMLParser

# What a browser sends: HTML first.
BROWSER = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
SELF_CLOSING = {"li", "option", "p", "tr", "td", "th"}


class Element:
    def __init__(self, tag, attrs, parent=None):
        self.tag, self.attrs, self.parent, self.children = tag, dict(attrs), parent, []

    @property
    def classes(self):
        return set((self.attrs.get("class") or "").split())

    def iter(self, prune=None):
        for child in self.children:
            if isinstance(child, Element):
                yield child
                if prune is None or not prune(child):
                    yield from child.iter(prune)

    def find_all(self, tag=None, cls=None, prune=None, **attrs):
        """Descendants by tag, class and attributes (aria_invalid= means aria-invalid=)."""
        wanted = {name.replace("_", "-"): value for name, value in attrs.items()}
        return [
            el for el in self.iter(prune)
            if (tag is None or el.tag == tag) and (cls is None or cls in el.classes)
            and all(el.attrs.get(name) == value for name, value in wanted.items())
        ]

    def one(self, tag=None, cls=None, **attrs):
        found = self.find_all(tag, cls, **attrs)
        assert len(found) == 1, f"expected one <{tag} class={cls} {attrs}>, found {len(found)}"
        return found[0]

    def texts(self, prune=None):
        for child in self.children:
            if isinstance(child, str):
                yield child
            elif prune is None or not prune(child):
                yield from child.texts(prune)

    @property
    def text(self):
        return " ".join(" ".join(self.texts()).split())

    def raw_text(self):
        """The text exactly as written, whitespace and all (a textarea's content)."""
        return "".join(self.texts())

    def own_text(self, *skip_classes):
        """Text without the subtrees of the given classes (an objective without its children)."""
        prune = lambda el: bool(el.classes & set(skip_classes))  # noqa: E731
        return " ".join(" ".join(self.texts(prune)).split())

    def all_classes(self):
        classes = set(self.classes)
        for el in self.iter():
            classes |= el.classes
        return classes

    def __repr__(self):
        return f"<{self.tag} {self.attrs}>"


class TreeBuilder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        if tag in SELF_CLOSING and self.stack[-1].tag == tag:
            self.stack.pop()
        element = Element(tag, attrs, self.stack[-1])
        self.stack[-1].children.append(element)
        if tag not in VOID:
            self.stack.append(element)

    def handle_endtag(self, tag):
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def parse(html):
    builder = TreeBuilder()
    builder.feed(html)
    builder.close()
    return builder.root
