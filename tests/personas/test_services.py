"""Writes for persona knowledge: facts, their order, the cap."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from tests.support.tenants import Tenant
from voiceapp.engine.knowledge import Fact
from voiceapp.personas.models import MAX_FACTS_PER_PERSONA, Persona, PersonaFact
from voiceapp.personas.services import (
    persona_fact_create,
    persona_fact_delete,
    persona_fact_reorder,
    persona_fact_update,
    persona_facts_replace,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def persona(tenant_a: Tenant) -> Persona:
    return Persona.objects.get(org=tenant_a.org, slug="assistant")


def answers(persona: Persona) -> list[str]:
    return list(persona.facts.values_list("answer", flat=True))


def fill(persona: Persona, count: int) -> None:
    PersonaFact.objects.bulk_create(
        PersonaFact(persona=persona, answer=f"Fact {i}", position=i) for i in range(count)
    )


def test_new_facts_go_last_and_are_trimmed(persona: Persona) -> None:
    # given two facts added one after the other
    first = persona_fact_create(persona=persona, question=" When? ", answer=" 9 to 5. ")
    second = persona_fact_create(persona=persona, answer="Main Street 1.")
    # then they keep that order, without surrounding whitespace
    assert (first.position, second.position) == (0, 1)
    assert (first.question, first.answer) == ("When?", "9 to 5.")
    assert second.question == ""
    assert answers(persona) == ["9 to 5.", "Main Street 1."]


def test_a_fact_can_be_placed_at_a_position(persona: Persona) -> None:
    persona_fact_create(persona=persona, answer="B", position=5)
    persona_fact_create(persona=persona, answer="A", position=1)

    assert answers(persona) == ["A", "B"]


@pytest.mark.parametrize(
    ("question", "answer", "field", "message"),
    [
        ("When?", "", "answer", "Write the answer the agent should give."),
        ("When?", "   ", "answer", "Write the answer the agent should give."),
        ("When?", "x" * 1001, "answer", "at most 1000 characters"),
        ("q" * 301, "Fine.", "question", "at most 300 characters"),
    ],
)
def test_bad_facts_are_refused_with_a_message(
    persona: Persona, question: str, answer: str, field: str, message: str
) -> None:
    with pytest.raises(ValidationError) as exc:
        persona_fact_create(persona=persona, question=question, answer=answer)

    assert message in " ".join(exc.value.message_dict[field])
    assert not persona.facts.exists()


def test_the_cap_is_enforced_with_a_clear_message(persona: Persona) -> None:
    # given a persona that holds as many facts as allowed
    fill(persona, MAX_FACTS_PER_PERSONA)
    # when one more is added
    with pytest.raises(ValidationError) as exc:
        persona_fact_create(persona=persona, answer="One too many.")
    # then it is refused, saying what the limit is
    assert f"already has {MAX_FACTS_PER_PERSONA} facts" in exc.value.messages[0]
    assert persona.facts.count() == MAX_FACTS_PER_PERSONA


def test_the_cap_is_per_persona(persona: Persona, tenant_a: Tenant) -> None:
    fill(persona, MAX_FACTS_PER_PERSONA)
    other = Persona.objects.create(
        org=tenant_a.org, name="Other", slug="other", instructions="x", voice=persona.voice
    )

    assert persona_fact_create(persona=other, answer="Room for this.").position == 0


def test_update_changes_only_what_is_given(persona: Persona) -> None:
    fact = persona_fact_create(persona=persona, question="When?", answer="9 to 5.")

    persona_fact_update(fact=fact, answer=" 8 to 4. ")

    fact.refresh_from_db()
    assert (fact.question, fact.answer, fact.position) == ("When?", "8 to 4.", 0)


def test_update_validates(persona: Persona) -> None:
    fact = persona_fact_create(persona=persona, question="When?", answer="9 to 5.")

    with pytest.raises(ValidationError) as exc:
        persona_fact_update(fact=fact, answer="")

    assert "answer" in exc.value.message_dict
    fact.refresh_from_db()
    assert fact.answer == "9 to 5."


def test_delete(persona: Persona) -> None:
    fact = persona_fact_create(persona=persona, answer="Gone soon.")

    persona_fact_delete(fact=fact)

    assert not persona.facts.exists()


def test_reorder_puts_facts_in_the_given_order(persona: Persona) -> None:
    a, b, c = (persona_fact_create(persona=persona, answer=x) for x in "ABC")

    persona_fact_reorder(persona=persona, fact_ids=[c.pk, a.pk, b.pk])

    assert answers(persona) == ["C", "A", "B"]
    assert list(persona.facts.values_list("position", flat=True)) == [0, 1, 2]


def test_reorder_needs_exactly_the_personas_facts(persona: Persona, tenant_b: Tenant) -> None:
    a, b = (persona_fact_create(persona=persona, answer=x) for x in "AB")
    foreign = persona_fact_create(
        persona=Persona.objects.get(org=tenant_b.org), answer="Not yours."
    )

    with pytest.raises(ValidationError, match=f"missing {b.pk}"):
        persona_fact_reorder(persona=persona, fact_ids=[a.pk])
    with pytest.raises(ValidationError, match=f"not facts of this persona: {foreign.pk}"):
        persona_fact_reorder(persona=persona, fact_ids=[b.pk, a.pk, foreign.pk])
    with pytest.raises(ValidationError, match="only once"):
        persona_fact_reorder(persona=persona, fact_ids=[a.pk, a.pk, b.pk])
    assert answers(persona) == ["A", "B"]
    assert foreign.position == PersonaFact.objects.get(pk=foreign.pk).position


def test_replace_sets_all_facts_in_order(persona: Persona) -> None:
    persona_fact_create(persona=persona, answer="Old.")

    persona_facts_replace(
        persona=persona,
        facts=[Fact(answer="Open 9 to 5.", question="Hours?"), Fact(answer="Main Street 1.")],
    )

    assert list(persona.facts.values_list("question", "answer", "position")) == [
        ("Hours?", "Open 9 to 5.", 0),
        ("", "Main Street 1.", 1),
    ]


def test_replace_with_nothing_clears(persona: Persona) -> None:
    persona_fact_create(persona=persona, answer="Old.")

    assert persona_facts_replace(persona=persona, facts=[]) == []

    assert not persona.facts.exists()


def test_replace_refuses_bad_input_and_keeps_the_old_facts(persona: Persona) -> None:
    persona_fact_create(persona=persona, answer="Old.")

    with pytest.raises(ValidationError) as exc:
        persona_facts_replace(persona=persona, facts=[Fact(answer="Fine."), Fact(answer=" ")])
    assert "facts[1].answer" in exc.value.message_dict

    too_many = [Fact(answer=f"F{i}") for i in range(MAX_FACTS_PER_PERSONA + 1)]
    with pytest.raises(ValidationError, match=f"at most {MAX_FACTS_PER_PERSONA} facts"):
        persona_facts_replace(persona=persona, facts=too_many)

    assert answers(persona) == ["Old."]
