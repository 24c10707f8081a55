! Profiling with mpif.h (fixed form): the program's own MPI_SEND and
! MPI_RECV count their calls and call PMPI_SEND and PMPI_RECV, which reach
! the library (its MPI_SEND is a weak name). Rank 0 sends to every other
! rank twice; the counts and the data are checked on every rank.
! Prints PASS profile77.
      PROGRAM PROF77
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER RANK, NP, IERR, ERRS, TOTAL, I, J, BUF(4)
      INTEGER STATUS(MPI_STATUS_SIZE)
      INTEGER NSEND, NRECV, ITEMS
      COMMON /CNT77/ NSEND, NRECV, ITEMS
      ERRS = 0
      NSEND = 0
      NRECV = 0
      ITEMS = 0
      CALL MPI_INIT(IERR)
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, RANK, IERR)
      CALL MPI_COMM_SIZE(MPI_COMM_WORLD, NP, IERR)
      DO J = 1, 2
        IF (RANK .EQ. 0) THEN
          DO I = 1, NP - 1
            BUF(1) = I
            BUF(2) = J
            BUF(3) = I * J
            BUF(4) = 77
            CALL MPI_SEND(BUF, 4, MPI_INTEGER, I, J, MPI_COMM_WORLD,
     &                    IERR)
          END DO
        ELSE
          CALL MPI_RECV(BUF, 4, MPI_INTEGER, 0, MPI_ANY_TAG,
     &                  MPI_COMM_WORLD, STATUS, IERR)
          IF (BUF(1) .NE. RANK .OR. BUF(2) .NE. J) ERRS = ERRS + 1
          IF (BUF(3) .NE. RANK * J .OR. BUF(4) .NE. 77) ERRS = ERRS + 1
          IF (STATUS(MPI_TAG) .NE. J) ERRS = ERRS + 1
        END IF
      END DO
      IF (RANK .EQ. 0) THEN
        IF (NSEND .NE. 2 * (NP - 1) .OR. NRECV .NE. 0) ERRS = ERRS + 1
        IF (ITEMS .NE. 8 * (NP - 1)) ERRS = ERRS + 1
      ELSE
        IF (NRECV .NE. 2 .OR. NSEND .NE. 0 .OR. ITEMS .NE. 8)
     &    ERRS = ERRS + 1
      END IF
      CALL MPI_REDUCE(ERRS, TOTAL, 1, MPI_INTEGER, MPI_SUM, 0,
     &                MPI_COMM_WORLD, IERR)
      IF (RANK .EQ. 0 .AND. TOTAL .EQ. 0) PRINT '(A)', 'PASS profile77'
      IF (RANK .EQ. 0 .AND. TOTAL .NE. 0) PRINT *, 'FAIL', TOTAL
      CALL MPI_FINALIZE(IERR)
      END

      SUBROUTINE MPI_SEND(BUF, COUNT, DTYPE, DEST, TAG, COMM, IERR)
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER COUNT, DTYPE, DEST, TAG, COMM, IERR, BUF(*)
      INTEGER NSEND, NRECV, ITEMS
      COMMON /CNT77/ NSEND, NRECV, ITEMS
      NSEND = NSEND + 1
      ITEMS = ITEMS + COUNT
      CALL PMPI_SEND(BUF, COUNT, DTYPE, DEST, TAG, COMM, IERR)
      END

      SUBROUTINE MPI_RECV(BUF, COUNT, DTYPE, SRC, TAG, COMM, STATUS,
     &                    IERR)
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER COUNT, DTYPE, SRC, TAG, COMM, IERR, BUF(*)
      INTEGER STATUS(MPI_STATUS_SIZE)
      INTEGER NSEND, NRECV, ITEMS
      COMMON /CNT77/ NSEND, NRECV, ITEMS
      NRECV = NRECV + 1
      ITEMS = ITEMS + COUNT
      CALL PMPI_RECV(BUF, COUNT, DTYPE, SRC, TAG, COMM, STATUS, IERR)
      END
