! Fixed-form Fortran 77 with mpif.h: point-to-point with wildcards and
! status fields, collectives (MPI_IN_PLACE, LOGICAL and MAXLOC reductions),
! a user reduction, derived types (a strided row, a struct sent from
! MPI_BOTTOM), strings (MPI_INFO_GET_STRING's lengths), attributes.
! Prints PASS f77 on rank 0.
      PROGRAM F77
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER IERR, RANK, NP, I, J, LEFT, RIGHT, ERRS, TOTAL, N
      INTEGER STATUS(MPI_STATUS_SIZE), REQS(2), COUNT, INFO, BUFL
      INTEGER SBUF(10), RBUF(10), ROWT, STRT, OP, COMM2, NLEN
      INTEGER BLENS(2), TYPES(2), PAIR(2), OUTP(2), IRES
      INTEGER(KIND=MPI_ADDRESS_KIND) DISPS(2), TAGUB
      DOUBLE PRECISION D(4), DR(4), A(3,4), ROW(4), DP(2), DOUTP(2)
      REAL RP(2), ROUTP(2)
      LOGICAL L, FLAG
      CHARACTER*(MPI_MAX_PROCESSOR_NAME) PNAME
      CHARACTER*(MPI_MAX_ERROR_STRING) ESTR
      CHARACTER*12 MSG
      REAL X(5), Y(5)
      EXTERNAL SUMSQ
      ERRS = 0
      CALL MPI_INIT(IERR)
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, RANK, IERR)
      CALL MPI_COMM_SIZE(MPI_COMM_WORLD, NP, IERR)
      CALL MPI_GET_PROCESSOR_NAME(PNAME, NLEN, IERR)
      IF (NLEN .LE. 0 .OR. PNAME(NLEN+1:NLEN+1) .NE. ' ') THEN
         PRINT *, 'processor name', NLEN
         ERRS = ERRS + 1
      END IF
! A ring: receive from anyone with any tag, check the status fields.
      LEFT = MOD(RANK + NP - 1, NP)
      RIGHT = MOD(RANK + 1, NP)
      DO I = 1, 10
         SBUF(I) = RANK * 100 + I
      END DO
      CALL MPI_ISEND(SBUF, 7, MPI_INTEGER, RIGHT, 40 + RANK,
     &     MPI_COMM_WORLD, REQS(1), IERR)
      CALL MPI_RECV(RBUF, 10, MPI_INTEGER, MPI_ANY_SOURCE,
     &     MPI_ANY_TAG, MPI_COMM_WORLD, STATUS, IERR)
      CALL MPI_WAIT(REQS(1), MPI_STATUS_IGNORE, IERR)
      CALL MPI_GET_COUNT(STATUS, MPI_INTEGER, COUNT, IERR)
      IF (STATUS(MPI_SOURCE) .NE. LEFT .OR. COUNT .NE. 7 .OR.
     &    STATUS(MPI_TAG) .NE. 40 + LEFT .OR. RBUF(7) .NE.
     &    LEFT * 100 + 7) THEN
         PRINT *, 'ring', STATUS(MPI_SOURCE), STATUS(MPI_TAG), COUNT
         ERRS = ERRS + 1
      END IF
! Doubles both ways with MPI_STATUSES_IGNORE.
      DO I = 1, 4
         D(I) = RANK + I / 4.0D0
      END DO
      CALL MPI_IRECV(DR, 4, MPI_DOUBLE_PRECISION, LEFT, 7,
     &     MPI_COMM_WORLD, REQS(2), IERR)
      CALL MPI_ISEND(D, 4, MPI_DOUBLE_PRECISION, RIGHT, 7,
     &     MPI_COMM_WORLD, REQS(1), IERR)
      CALL MPI_WAITALL(2, REQS, MPI_STATUSES_IGNORE, IERR)
      IF (DR(4) .NE. LEFT + 1.0D0) ERRS = ERRS + 1
! Collectives: integer sum, in-place double sum, LOGICAL and, MAXLOC.
      CALL MPI_ALLREDUCE(RANK, TOTAL, 1, MPI_INTEGER, MPI_SUM,
     &     MPI_COMM_WORLD, IERR)
      IF (TOTAL .NE. NP * (NP - 1) / 2) ERRS = ERRS + 1
      D(1) = 1.5D0
      CALL MPI_ALLREDUCE(MPI_IN_PLACE, D, 1, MPI_DOUBLE_PRECISION,
     &     MPI_SUM, MPI_COMM_WORLD, IERR)
      IF (D(1) .NE. 1.5D0 * NP) ERRS = ERRS + 1
      L = RANK .GE. 0
      CALL MPI_ALLREDUCE(L, FLAG, 1, MPI_LOGICAL, MPI_LAND,
     &     MPI_COMM_WORLD, IERR)
      IF (.NOT. FLAG) ERRS = ERRS + 1
      L = RANK .EQ. NP - 1
      CALL MPI_ALLREDUCE(L, FLAG, 1, MPI_LOGICAL, MPI_LOR,
     &     MPI_COMM_WORLD, IERR)
      IF (.NOT. FLAG) ERRS = ERRS + 1
      PAIR(1) = MOD(RANK * 7, 5)
      PAIR(2) = RANK
      CALL MPI_ALLREDUCE(PAIR, OUTP, 1, MPI_2INTEGER, MPI_MAXLOC,
     &     MPI_COMM_WORLD, IERR)
      N = -1
      DO I = 0, NP - 1
         IF (N .LT. 0) THEN
            N = I
         ELSE IF (MOD(I * 7, 5) .GT. MOD(N * 7, 5)) THEN
            N = I
         END IF
      END DO
      IF (OUTP(2) .NE. N) ERRS = ERRS + 1
! MINLOC on DOUBLE PRECISION and MAXLOC on REAL pairs (index in the
! value's type); equal values take the lower index.
      DP(1) = DBLE(MOD(RANK, 2)) + 0.25D0
      DP(2) = DBLE(RANK)
      CALL MPI_ALLREDUCE(DP, DOUTP, 1, MPI_2DOUBLE_PRECISION,
     &     MPI_MINLOC, MPI_COMM_WORLD, IERR)
      IF (DOUTP(1) .NE. 0.25D0 .OR. DOUTP(2) .NE. 0.0D0)
     &     ERRS = ERRS + 1
      RP(1) = REAL(MOD(RANK * 7, 5))
      RP(2) = REAL(RANK)
      CALL MPI_ALLREDUCE(RP, ROUTP, 1, MPI_2REAL, MPI_MAXLOC,
     &     MPI_COMM_WORLD, IERR)
      IF (ROUTP(2) .NE. REAL(N)) ERRS = ERRS + 1
      MSG = ' '
      IF (RANK .EQ. 0) MSG = 'hello world'
      CALL MPI_BCAST(MSG, 12, MPI_CHARACTER, 0, MPI_COMM_WORLD, IERR)
      IF (MSG .NE. 'hello world') ERRS = ERRS + 1
! A user reduction written in Fortran.
      CALL MPI_OP_CREATE(SUMSQ, .TRUE., OP, IERR)
      DO I = 1, 5
         X(I) = I
      END DO
      CALL MPI_REDUCE(X, Y, 5, MPI_REAL, OP, 0, MPI_COMM_WORLD, IERR)
      IF (RANK .EQ. 0 .AND. ABS(Y(3) - 4.0 * NP + 1) .GT. 1E-3) THEN
         PRINT *, 'user op', Y
         ERRS = ERRS + 1
      END IF
      CALL MPI_OP_FREE(OP, IERR)
! A strided row of a column-major matrix, to the left neighbour.
      DO J = 1, 4
         DO I = 1, 3
            A(I, J) = RANK * 1000 + I * 10 + J
         END DO
      END DO
      CALL MPI_TYPE_VECTOR(4, 1, 3, MPI_DOUBLE_PRECISION, ROWT, IERR)
      CALL MPI_TYPE_COMMIT(ROWT, IERR)
      CALL MPI_SENDRECV(A(2, 1), 1, ROWT, LEFT, 9, ROW, 4,
     &     MPI_DOUBLE_PRECISION, RIGHT, 9, MPI_COMM_WORLD, STATUS,
     &     IERR)
      IF (ROW(3) .NE. RIGHT * 1000 + 23) THEN
         PRINT *, 'row', ROW
         ERRS = ERRS + 1
      END IF
      CALL MPI_TYPE_FREE(ROWT, IERR)
! A struct of absolute addresses sent from MPI_BOTTOM.
      CALL MPI_GET_ADDRESS(IRES, DISPS(1), IERR)
      CALL MPI_GET_ADDRESS(D(2), DISPS(2), IERR)
      BLENS(1) = 1
      BLENS(2) = 1
      TYPES(1) = MPI_INTEGER
      TYPES(2) = MPI_DOUBLE_PRECISION
      CALL MPI_TYPE_CREATE_STRUCT(2, BLENS, DISPS, TYPES, STRT, IERR)
      CALL MPI_TYPE_COMMIT(STRT, IERR)
      IRES = RANK + 5
      D(2) = RANK * 2.5D0
      IF (RANK .NE. NP - 1) THEN
         IRES = 0
         D(2) = 0
      END IF
      CALL MPI_BCAST(MPI_BOTTOM, 1, STRT, NP - 1, MPI_COMM_WORLD,
     &     IERR)
      IF (IRES .NE. NP + 4 .OR. D(2) .NE. (NP - 1) * 2.5D0) THEN
         PRINT *, 'bottom', IRES, D(2)
         ERRS = ERRS + 1
      END IF
      CALL MPI_TYPE_FREE(STRT, IERR)
! Split, attributes, error strings.
      CALL MPI_COMM_SPLIT(MPI_COMM_WORLD, MOD(RANK, 2), -RANK, COMM2,
     &     IERR)
      CALL MPI_COMM_RANK(COMM2, I, IERR)
      CALL MPI_COMM_SIZE(COMM2, J, IERR)
      IF (I .NE. J - 1 - RANK / 2) ERRS = ERRS + 1
      CALL MPI_COMM_FREE(COMM2, IERR)
      CALL MPI_COMM_GET_ATTR(MPI_COMM_WORLD, MPI_TAG_UB, TAGUB, FLAG,
     &     IERR)
      IF (.NOT. FLAG .OR. TAGUB .LT. 32767) ERRS = ERRS + 1
      CALL MPI_ERROR_STRING(MPI_ERR_TRUNCATE, ESTR, NLEN, IERR)
      IF (NLEN .LE. 0 .OR. IERR .NE. MPI_SUCCESS) ERRS = ERRS + 1
      IF (MPI_WTIME() .LE. 0.0D0) ERRS = ERRS + 1
! MPI_INFO_GET_STRING counts characters, not C's NUL: BUFLEN 0 leaves
! the value alone, 2 truncates, and either returns the value's length.
      CALL MPI_INFO_CREATE(INFO, IERR)
      CALL MPI_INFO_SET(INFO, 'colour', 'turquoise', IERR)
      MSG = 'canary'
      BUFL = 0
      CALL MPI_INFO_GET_STRING(INFO, 'colour', BUFL, MSG, FLAG, IERR)
      IF (.NOT. FLAG .OR. BUFL .NE. 9 .OR. MSG .NE. 'canary')
     &   ERRS = ERRS + 1
      BUFL = 2
      CALL MPI_INFO_GET_STRING(INFO, 'colour', BUFL, MSG, FLAG, IERR)
      IF (BUFL .NE. 9 .OR. MSG .NE. 'tu') ERRS = ERRS + 1
      BUFL = 12
      CALL MPI_INFO_GET_STRING(INFO, 'colour', BUFL, MSG, FLAG, IERR)
      IF (BUFL .NE. 9 .OR. MSG .NE. 'turquoise') ERRS = ERRS + 1
      BUFL = 5
      MSG = 'canary'
      CALL MPI_INFO_GET_STRING(INFO, 'shape', BUFL, MSG, FLAG, IERR)
      IF (FLAG .OR. BUFL .NE. 5 .OR. MSG .NE. 'canary') ERRS = ERRS + 1
      CALL MPI_INFO_FREE(INFO, IERR)
      CALL MPI_REDUCE(ERRS, TOTAL, 1, MPI_INTEGER, MPI_SUM, 0,
     &     MPI_COMM_WORLD, IERR)
      IF (RANK .EQ. 0 .AND. TOTAL .EQ. 0) PRINT '(A)', 'PASS f77'
      IF (RANK .EQ. 0 .AND. TOTAL .NE. 0) PRINT *, 'FAIL', TOTAL
      CALL MPI_FINALIZE(IERR)
      END

! The user reduction: the sum plus one per combination.
      SUBROUTINE SUMSQ(IN, INOUT, LEN, TYPE)
      INTEGER LEN, TYPE, I
      REAL IN(LEN), INOUT(LEN)
      DO I = 1, LEN
         INOUT(I) = INOUT(I) + IN(I) + 1
      END DO
      END
