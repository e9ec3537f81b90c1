package org.messagepump.spring.boot.jpa;

import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/** A ledger entry, written by the handlers through a Spring Data JPA repository. */
@Entity
@Table(name = "entries")
public class Entry {

  @Id private String id;

  private int amount;

  private int attempt;

  protected Entry() {}

  Entry(String id, int amount, int attempt) {
    this.id = id;
    this.amount = amount;
    this.attempt = attempt;
  }

  public String getId() {
    return id;
  }

  public int getAmount() {
    return amount;
  }

  public int getAttempt() {
    return attempt;
  }
}
