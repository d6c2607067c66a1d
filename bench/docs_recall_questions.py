"""The questions of bench/docs_recall.py: each in the words a user would type, not the Language
Reference's, with the pydoc_data.topics topics whose file answers it and a phrase of the answer
that each of those topics holds (and no other: the bench checks, whitespace aside).

The topics copy each other's sections (compound holds while, for, try, function; specialnames
holds customization, attribute-access, sequence-types, numeric-types, context-managers;
execmodel holds naming), so an answer is often in two or three files, and any of them counts.
Written against Python 3.11's topics; a question whose topic a Python lacks is left out.
"""

from __future__ import annotations

from typing import NamedTuple


class Question(NamedTuple):
    text: str
    topics: tuple[str, ...]
    evidence: str  # a phrase of the answer, in every one of `topics`


QUESTIONS: tuple[Question, ...] = (
    Question("how do I make a function that hands back values one at a time and picks up where it left off "
             "the next time it is asked",
             ("yield",), "Using yield in a function definition is sufficient"),
    Question("what happens to the extra block after a loop when I jump out of the loop early",
             ("compound", "for", "while"), 'A "break" statement executed in the first suite terminates the loop'),
    Question("I need some tidy-up code that always runs whether or not something went wrong before it",
             ("compound", "try"), 'If "finally" is present, it specifies a'),
    Question("can I write a tiny nameless function inline, right inside an expression",
             ("compound", "function", "lambda"), "anonymous functions"),
    Question("how can code inside a function change a variable that lives at the top level of the module",
             ("global",), "It would be impossible to assign to a global variable without"),
    Question("an inner function wants to rebind a variable that belongs to the function around it",
             ("nonlocal",), "previously bound variables in the nearest enclosing scope excluding globals"),
    Question("sanity checks in my code that vanish when the interpreter runs with optimisation switched on",
             ("assert",), "__debug__"),
    Question("is there a statement that does nothing at all, for a spot where the syntax needs something",
             ("pass",), "null operation"),
    Question("how do I signal a new error as the direct consequence of another one so both tracebacks show",
             ("raise",), "__cause__"),
    Question("how do I get rid of a variable so that its name no longer refers to anything",
             ("del",), "Deletion of a name removes the binding"),
    Question("what steps happen when I bring in code that lives in another file",
             ("import",), 'The basic import statement (no "from" clause) is executed in two steps'),
    Question("trim spaces off the beginning and end of some text",
             ("string-methods",), "Return a copy of the string with the leading and trailing characters removed"),
    Question("make every word of a sentence start with a capital letter and the rest lower case",
             ("string-methods",), "Return a titlecased version of the string"),
    Question("look something up by key but get a fallback value instead of an error when it is missing",
             ("typesmapping",), "Return the value for *key* if *key* is in the dictionary, else *default*"),
    Question("put an element into a list at a position of my choosing rather than at the end",
             ("typesseq", "typesseq-mutable"), "inserts *x* into *s* at the"),
    Question("how do I write whole numbers in base sixteen or base two directly in source code",
             ("integers",), "hexinteger"),
    Question("how do I type a very large or very tiny decimal number with a power of ten",
             ("floating",), "exponentfloat"),
    Question("how do I type a number with a square root of minus one part straight into the code",
             ("imaginary",), "Imaginary literals"),
    Question("which values count as no when a condition tests them",
             ("truth",), "Here are most of the built-in objects considered false"),
    Question("what do I get when I take a fractional power of a value below zero",
             ("power",), "Raising a negative number to a fractional power results in a"),
    Question("what sign does the leftover of a division have when one of the numbers is negative",
             ("binary",), "The modulo operator always yields a result with the same sign as"),
    Question("how do I move the binary digits of an integer a few places, multiplying it by a power of two",
             ("shifting",), "They shift the first argument to the left or right by the number of bits"),
    Question("combine two integers so that a bit is set only where exactly one of them has it set",
             ("bitwise",), "bitwise XOR (exclusive OR)"),
    Question("control how my object is displayed at the interactive prompt so it could be typed back in",
             ("customization", "specialnames"), 'Called by the "repr()" built-in function to compute the'),
    Question("run my own code when someone reads a field my object does not have",
             ("attribute-access", "specialnames"), "Called when the default attribute access fails with an"),
    Question("make my own container class report how many items it holds",
             ("sequence-types", "specialnames"), 'Called to implement the built-in function "len()"'),
    Question("let instances of my class be summed or multiplied with the usual symbols",
             ("numeric-types", "specialnames"),
             "These methods are called to implement the binary arithmetic operations"),
    Question("make my object set something up on entering a block and tear it down on leaving, automatically",
             ("context-managers", "specialnames"), "Enter the runtime context related to this object"),
    Question("why does a list I gave as a parameter's fallback keep growing from one call to the next",
             ("compound", "function"),
             "Default parameter values are evaluated from left to right when the function definition is executed"),
    Question("stop my running program at a given line of a given file while stepping through it",
             ("debugger",), "With a *lineno* argument, set a break there in the current file"),
    Question("in which surrounding regions is a variable looked for when code uses it",
             ("execmodel", "naming"),
             "When a name is used in a code block, it is resolved using the nearest enclosing scope"),
    Question("why is a member whose name starts with two underscores renamed inside its class",
             ("atom-identifiers",), "Private name mangling"),
    Question("how do I keep escape sequences from being interpreted in a quoted literal, say for a Windows path",
             ("strings",), "treat backslashes as literal characters"),
    Question("which operators bind more tightly than others when an expression mixes them",
             ("operator-summary",), "summarizes the operator precedence"),
    Question("pass the items of a list to a function as separate positional arguments",
             ("calls",), 'If the syntax "*expression" appears in the function call'),
    Question("what happens when I add a whole number and a number with a fractional part",
             ("conversions",),
             "otherwise, if either argument is a floating point number, the other is converted to floating point"),
    Question("skip the rest of this pass through the loop and go on with the next round",
             ("continue",), "It continues with the next cycle of the nearest enclosing loop"),
    Question("what does leaving a generator early with a value do, and which exception carries that value",
             ("return",), 'In a generator function, the "return" statement indicates that the generator is done'),
    Question("how do I find out what class an object was made from",
             ("specialattrs",), "The class to which a class instance belongs"),
    Question("why does multiplying a list of lists give me inner lists that all change together",
             ("typesseq", "typesseq-mutable"), "are not copied; they are referenced multiple times"),
    Question("unpack a sequence into a few variables with one of them collecting whatever is left over",
             ("assignment",), "prefixed with an asterisk"),
    Question("functions that can be suspended while they wait for input or output, and resumed later",
             ("async", "compound"), "Execution of Python coroutines can be suspended and resumed at many points"),
)
