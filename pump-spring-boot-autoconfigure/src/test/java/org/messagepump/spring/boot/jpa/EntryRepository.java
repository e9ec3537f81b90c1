package org.messagepump.spring.boot.jpa;

import org.springframework.data.jpa.repository.JpaRepository;

/** Spring Data JPA: its methods are @Transactional (REQUIRED) through JpaTransactionManager. */
public interface EntryRepository extends JpaRepository<Entry, String> {}
